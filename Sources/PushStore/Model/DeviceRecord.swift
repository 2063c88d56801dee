import Foundation

/// Everything the store holds for one device, as export writes it and import reads it (docs/DATA-FORMAT.md): the
/// device row, its interests and its Live Activity tokens.
package struct DeviceRecord: Sendable, Equatable {
    package var device: Device
    /// Sorted, without duplicates.
    package var interests: [String]
    /// Sorted by `DeviceRecord.order`; their `deviceID` is `device.id`.
    package var liveActivityTokens: [LiveActivityToken]
    /// Times the source did not give (a hand-made file): the parser filled them with "now", and an import of a
    /// known device keeps the stored ones instead, so importing such a file twice changes nothing.
    package var omittedTimes: OmittedTimes

    /// Times a record's source may leave out.
    package struct OmittedTimes: OptionSet, Sendable, Equatable {
        package let rawValue: Int
        package init(rawValue: Int) { self.rawValue = rawValue }
        package static let createdAt = OmittedTimes(rawValue: 1)
        package static let lastRegisteredAt = OmittedTimes(rawValue: 2)
        /// `createdAt`/`updatedAt` of the Live Activity tokens.
        package static let liveActivityTimes = OmittedTimes(rawValue: 4)
        /// `lastResult` and `invalidatedAt` (a source that knows nothing of deliveries, like another provider's
        /// export): a known device keeps its health, so a device invalidated here is not revived by an import.
        package static let health = OmittedTimes(rawValue: 8)
    }

    package init(
        device: Device, interests: [String], liveActivityTokens: [LiveActivityToken] = [],
        omittedTimes: OmittedTimes = []
    ) {
        self.device = device
        self.interests = interests
        self.liveActivityTokens = liveActivityTokens
        self.omittedTimes = omittedTimes
    }

    /// The record with the times it omits taken from `stored` (the same device as stored).
    package func keepingTimes(of stored: DeviceRecord) -> DeviceRecord {
        var record = self
        if omittedTimes.contains(.createdAt) { record.device.createdAt = stored.device.createdAt }
        if omittedTimes.contains(.lastRegisteredAt) { record.device.lastRegisteredAt = stored.device.lastRegisteredAt }
        if omittedTimes.contains(.health) {
            record.device.lastResult = stored.device.lastResult
            record.device.invalidatedAt = stored.device.invalidatedAt
        }
        if omittedTimes.contains(.liveActivityTimes) {
            for index in record.liveActivityTokens.indices {
                let token = record.liveActivityTokens[index]
                if let same = stored.liveActivityTokens.first(where: {
                    $0.kind == token.kind && $0.attributesType == token.attributesType
                        && $0.activityID == token.activityID
                        && $0.token == token.token
                }) {
                    record.liveActivityTokens[index].createdAt = same.createdAt
                    record.liveActivityTokens[index].updatedAt = same.updatedAt
                }
            }
        }
        record.omittedTimes = []
        return record
    }

    /// The order records keep their Live Activity tokens in, so two records of the same data compare equal: start
    /// tokens before update tokens, then by attributes type and activity id.
    package static func order(_ a: LiveActivityToken, _ b: LiveActivityToken) -> Bool {
        if a.kind != b.kind { return a.kind == .start }
        if a.attributesType != b.attributesType { return a.attributesType < b.attributesType }
        return (a.activityID ?? "") < (b.activityID ?? "")
    }

    /// The identity import keys devices by: (platform, token) within an instance.
    package var key: DeviceKey { DeviceKey(platform: device.platform, token: device.token) }
}

/// (platform, token): what makes a device the same device within an instance.
package struct DeviceKey: Sendable, Hashable {
    package var platform: Platform
    package var token: String

    package init(platform: Platform, token: String) {
        self.platform = platform
        self.token = token
    }
}

/// One device as an export reads it: the record and the position to resume after it.
package struct ExportedDevice: Sendable, Equatable {
    /// The store's internal key of the device: exports run in this order, and `after:` resumes behind it.
    package var position: Int64
    package var record: DeviceRecord

    package init(position: Int64, record: DeviceRecord) {
        self.position = position
        self.record = record
    }
}

/// What importing one record did (or, in a dry run, would do).
package enum DeviceImportOutcome: Sendable, Equatable {
    /// A new device.
    case created
    /// A device with the same (platform, token) existed and some of its data changed.
    case updated
    /// A device with the same (platform, token) existed with exactly this data.
    case unchanged
    /// Nothing written for this record, for the reason given.
    case refused(String)
}

/// The caps an import respects, the same the device API enforces.
package struct DeviceImportCaps: Sendable, Equatable {
    package var maxDevicesPerInstance: Int
    /// Valid devices one user may have.
    package var maxDevicesPerUser: Int
    package var interests: InterestLimits

    package init(maxDevicesPerInstance: Int, maxDevicesPerUser: Int, interests: InterestLimits) {
        self.maxDevicesPerInstance = maxDevicesPerInstance
        self.maxDevicesPerUser = maxDevicesPerUser
        self.interests = interests
    }

    /// No cap: tests and tools.
    package static let unlimited = DeviceImportCaps(
        maxDevicesPerInstance: .max, maxDevicesPerUser: .max,
        interests: .unlimited)
}
