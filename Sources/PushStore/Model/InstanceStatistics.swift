import Foundation

/// One instance at a glance, for the console's overview: the device registry's size and the publishes created
/// since a moment (usually the start of the UTC day), with their outcome counters summed.
package struct InstanceStatistics: Sendable, Equatable {
    /// Registered devices by platform, invalidated ones included.
    package var devicesByPlatform: [Platform: Int]
    /// Devices APNs declared dead (or whose token is malformed): skipped by publishes until they register again.
    package var invalidDevices: Int
    /// Publishes created since the given moment, by state.
    package var publishesByState: [PublishState: Int]
    /// The outcome counters of those publishes, summed.
    package var counters: PublishCounters

    package init(
        devicesByPlatform: [Platform: Int] = [:], invalidDevices: Int = 0,
        publishesByState: [PublishState: Int] = [:], counters: PublishCounters = [:]
    ) {
        self.devicesByPlatform = devicesByPlatform
        self.invalidDevices = invalidDevices
        self.publishesByState = publishesByState
        self.counters = counters
    }

    /// Every registered device.
    package var devices: Int { devicesByPlatform.values.reduce(0, +) }
    /// Every publish counted.
    package var publishes: Int { publishesByState.values.reduce(0, +) }
}
