import PushStore
import SQL

/// The invalidation log's reads, the same on SQLite and PostgreSQL. What differs stays per backend: the unnotified
/// rows' condition (each spelt as its partial index `device_invalidations_unnotified` is, so the planner uses it),
/// the marking (`IN (…)` against `= ANY(array)`) and the purge (PostgreSQL skips rows another node is deleting).
package enum InvalidationSQL {
    /// The columns `invalidation(_:)` reads.
    package static let columns =
        "id, instance_id, device_id, platform, token_mask, user_id, reason, status, provider_at, at"

    /// A row of `columns`.
    package static func invalidation(_ row: some SQLRow) throws -> DeviceInvalidation {
        DeviceInvalidation(
            id: try row.decode("id"), instanceID: try row.decode("instance_id"), deviceID: try row.decode("device_id"),
            platform: try row.decode("platform"), maskedToken: try row.decode("token_mask"),
            userID: try row.decode("user_id"), reason: try row.decode("reason"), status: try row.decode("status"),
            providerTimestamp: try row.optionalDate("provider_at"), at: try row.date("at"))
    }

    /// An instance's invalidations after `after`, oldest first, at most `limit`.
    package static func list(
        instanceID: String, after: Int64, limit: Int, on connection: some SQLConnection
    ) throws -> [DeviceInvalidation] {
        try connection.fetchAll(
            """
            SELECT \(raw: columns) FROM device_invalidations
            WHERE instance_id = \(instanceID) AND id > \(after) ORDER BY id LIMIT \(max(0, limit))
            """
        ) { row in try invalidation(row) }
    }
}
