import Foundation

/// Decides what importing a batch of records does, from what the store holds (pure: both backends read the same
/// facts, hand them over and carry out the steps, so they decide alike). Caps are checked record by record against
/// running counts, so a batch that would cross one imports up to the cap and refuses the rest with a reason.
package struct DeviceImportPlanner: Sendable {
    /// What the store holds that the batch's decisions depend on.
    package struct Facts: Sendable {
        /// The instance's devices with a (platform, token) of the batch: their internal key and data.
        package var existing: [DeviceKey: (ref: Int64, record: DeviceRecord)] = [:]
        /// Public ids of the batch's records that some device (of any instance) already has.
        package var takenIDs: Set<String> = []
        /// The instance's devices, subscriptions ((device, interest) pairs) and distinct interest names.
        package var devices: Int64 = 0
        package var subscriptions: Int64 = 0
        package var interests: Int64 = 0
        /// The batch's interest names the instance already has.
        package var knownInterests: Set<String> = []
        /// Valid devices of each user the batch names.
        package var userDevices: [String: Int64] = [:]

        package init() {}
    }

    /// What to do for one record.
    package enum Step: Sendable, Equatable {
        case create(DeviceRecord)
        /// Write the record over the device `ref` (its id kept); interests and Live Activity tokens are rewritten
        /// only when they changed.
        case update(ref: Int64, DeviceRecord, interestsChanged: Bool, liveActivitiesChanged: Bool)
        case unchanged
        case refused(String)

        package var outcome: DeviceImportOutcome {
            switch self {
            case .create: return .created
            case .update: return .updated
            case .unchanged: return .unchanged
            case .refused(let reason): return .refused(reason)
            }
        }
    }

    package var caps: DeviceImportCaps
    /// Makes the id of a new device whose record's id is taken or missing.
    package var makeID: @Sendable (Platform) -> String

    package init(
        caps: DeviceImportCaps,
        makeID: @escaping @Sendable (Platform) -> String = {
            Device.makeID(platform: $0, at: Date())
        }
    ) {
        self.caps = caps
        self.makeID = makeID
    }

    /// The step of each record, in order; `instanceID` replaces the records' own.
    package func plan(_ records: [DeviceRecord], into instanceID: String, facts: Facts) -> [Step] {
        var devices = facts.devices
        var subscriptions = facts.subscriptions
        var interestCount = facts.interests
        var knownInterests = facts.knownInterests
        var userDevices = facts.userDevices
        var usedIDs = facts.takenIDs
        var seen = Set<DeviceKey>()
        var steps: [Step] = []
        steps.reserveCapacity(records.count)
        for var record in records {
            record.device.instanceID = instanceID
            guard seen.insert(record.key).inserted else {
                steps.append(.refused("the same platform and token as an earlier line of this batch"))
                continue
            }
            let stored = facts.existing[record.key]
            if let stored {
                record = record.keepingTimes(of: stored.record)
                record.device.id = stored.record.device.id
                // An existing binding is never replaced or dropped by an import (docs/DATA-FORMAT.md).
                if let bound = stored.record.device.userID {
                    if let wanted = record.device.userID, wanted != bound {
                        steps.append(.refused("the device is bound to another user"))
                        continue
                    }
                    record.device.userID = bound
                }
            }
            record.omittedTimes = []
            for index in record.liveActivityTokens.indices {
                record.liveActivityTokens[index].deviceID = record.device.id
            }
            if let stored, stored.record == record {
                steps.append(.unchanged)
                continue
            }
            // Caps, against the counts as the earlier records of the batch left them.
            if stored == nil && devices >= Int64(clamping: caps.maxDevicesPerInstance) {
                steps.append(.refused("the instance has maxDevicesPerInstance (\(caps.maxDevicesPerInstance)) devices"))
                continue
            }
            var newUser: String?
            if let user = record.device.userID, record.device.invalidatedAt == nil {
                let countedBefore = stored.map {
                    $0.record.device.userID == user && $0.record.device.invalidatedAt == nil
                }
                if countedBefore != true {
                    if userDevices[user, default: 0] >= Int64(clamping: caps.maxDevicesPerUser) {
                        steps.append(.refused("the user has maxDevicesPerUser (\(caps.maxDevicesPerUser)) devices"))
                        continue
                    }
                    newUser = user
                }
            }
            let oldInterests = stored?.record.interests ?? []
            let newNames = record.interests.filter { !knownInterests.contains($0) }
            let after = (
                subscriptions: subscriptions + Int64(record.interests.count - oldInterests.count),
                interests: interestCount + Int64(newNames.count)
            )
            if let violation = caps.interests.violation(before: (subscriptions, interestCount), after: after) {
                steps.append(
                    .refused(
                        violation == .subscriptionLimitReached
                            ? "the instance has maxSubscriptionsPerInstance subscriptions"
                            : "the instance has maxInterestsPerInstance interests"))
                continue
            }
            (subscriptions, interestCount) = after
            knownInterests.formUnion(newNames)
            if let newUser { userDevices[newUser, default: 0] += 1 }
            if let stored {
                steps.append(
                    .update(
                        ref: stored.ref, record, interestsChanged: record.interests != oldInterests,
                        liveActivitiesChanged: record.liveActivityTokens != stored.record.liveActivityTokens))
            } else {
                if record.device.id.isEmpty || !usedIDs.insert(record.device.id).inserted {
                    record.device.id = makeID(record.device.platform)
                    usedIDs.insert(record.device.id)
                    for index in record.liveActivityTokens.indices {
                        record.liveActivityTokens[index].deviceID = record.device.id
                    }
                }
                devices += 1
                steps.append(.create(record))
            }
        }
        return steps
    }
}
