import Foundation
import PushStore
import SQL

/// The device export's pages, the same on SQLite and PostgreSQL but for how a page's interests and Live Activity
/// tokens are read (by key range with SQLite's partial indexes, or `= ANY` of the page's keys), which each backend
/// hands in. Imports stay per backend: SQLite writes row by row under its one writer, PostgreSQL one `unnest`
/// statement per kind of change for the whole batch.
package enum TransferSQL {
    /// The interests and Live Activity tokens of a page's devices, by device key.
    package typealias Extras = (interests: [Int64: [String]], tokens: [Int64: [LiveActivityToken]])

    /// Reads pages of `limit` devices above `after` in key order (of one instance, or all when nil) and hands each to
    /// `page` until it returns false or a page comes short; all inside the caller's one read transaction, so every
    /// page comes from one snapshot.
    package static func export(
        instanceID: String?, after: Int64, limit: Int, on connection: some SQLConnection,
        extras: ([Int64]) throws -> Extras, page: ([ExportedDevice]) throws -> Bool
    ) throws {
        var cursor = after
        while true {
            let records = try exportPage(
                instanceID: instanceID, after: cursor, limit: limit, on: connection, extras: extras)
            guard let last = records.last else { return }
            guard try page(records), records.count == limit else { return }
            cursor = last.position
        }
    }

    /// Up to `limit` devices above `after` in key order, with their interests and Live Activity tokens.
    package static func exportPage(
        instanceID: String?, after: Int64, limit: Int, on connection: some SQLConnection,
        extras: ([Int64]) throws -> Extras
    ) throws -> [ExportedDevice] {
        // `instance_id || ''`: walk the primary key and filter. On the (instance, platform, token) index both
        // databases would fetch every device of the instance and sort them for each page: quadratic in the export.
        let filter: SQLQuery = instanceID.map { "AND instance_id || '' = \($0)" } ?? ""
        let rows = try connection.fetchAll(
            "SELECT \(raw: DeviceSQL.columns) FROM devices WHERE id > \(after) \(filter) ORDER BY id LIMIT \(limit)"
        ) { try DeviceSQL.device($0) }
        guard !rows.isEmpty else { return [] }
        let (interests, tokens) = try extras(rows.map(\.ref))
        return rows.map { row in
            ExportedDevice(
                position: row.ref,
                record: DeviceRecord(
                    device: row.device, interests: (interests[row.ref] ?? []).sorted(),
                    liveActivityTokens: (tokens[row.ref] ?? []).sorted(by: DeviceRecord.order)))
        }
    }
}
