import Foundation
import PushStore
import SQL

/// What the two backends share of delivery results: a result's effect on its device, the reader of a device a
/// result invalidates, and the report's facts. What differs stays per backend: SQLite applies results row by row
/// under its one writer; PostgreSQL applies them in set-based rounds over `unnest` arrays with the rows locked in id
/// order (no statement of either is the other's), and a publish's targets are JSON text on SQLite and `text[]` on
/// PostgreSQL, so each backend says how a publish names a device (`reportFacts`).
package enum DeliveryResultSQL {
    /// The evidence time of an invalidation (a device registered at or after it keeps working, because the app has
    /// re-sent the token since) and the corrected environment, of `result`'s effect.
    package static func effect(of result: DeviceResult) -> (evidence: Date?, environment: PushEnvironment?) {
        switch result.effect {
        case .none: return (nil, nil)
        case .unregistered(let since): return (since, nil)
        case .badToken: return (result.at, nil)
        case .environment(let corrected): return (nil, corrected)
        }
    }

    /// The device columns `invalidation(_:of:)` reads, in order.
    package static let dyingColumns = "instance_id, public_id, platform, token, user_id"

    /// The invalidation log's record of the device in a row of `dyingColumns` (read before the result's UPDATE),
    /// invalidated by `result`.
    package static func invalidation(_ row: some SQLRow, of result: DeviceResult) throws -> DeviceInvalidation {
        DeviceInvalidation(
            id: 0, instanceID: try row.decode(0), deviceID: try row.decode(1), platform: try row.decode(2),
            maskedToken: DeviceInvalidation.mask(token: try row.decode(3)), userID: try row.decode(4),
            reason: result.invalidationReason, status: result.status, providerTimestamp: result.providerTimestamp,
            at: result.at)
    }

    /// The reported device and publish. `targetsDevice(userID, ref)` is the backend's boolean expression, over the
    /// `publish_jobs` row, of whether the publish names the device's user (a users publish) or an interest the
    /// device follows (an interests publish); a device or user that does not exist is nil.
    package static func reportFacts(
        instanceID: String, deviceID: String, publishID: String, on connection: some SQLConnection,
        targetsDevice: (_ userID: String?, _ ref: Int64?) -> SQLQuery
    ) throws -> ReportFacts {
        let found = try DeviceSQL.find(instanceID: instanceID, id: deviceID, on: connection)
        let publish = try connection.fetchOne(
            """
            SELECT kind, created_at, started_at, finished_at, \(targetsDevice(found?.device.userID, found?.ref))
            FROM publish_jobs WHERE instance_id = \(instanceID) AND publish_id = \(publishID)
            """
        ) { row in
            ReportedPublish(
                kind: PublishKind(rawValue: try row.decode(0)) ?? .interests, createdAt: try row.date(1),
                startedAt: try row.optionalDate(2), finishedAt: try row.optionalDate(3),
                targetsDevice: try row.decode(4, as: Bool?.self) ?? false)
        }
        return ReportFacts(device: found?.device, publish: publish)
    }
}
