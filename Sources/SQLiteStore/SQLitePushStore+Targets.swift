import Foundation
import PushStore
import StoreSQL

extension SQLitePushStore {
    /// One per-interest cursor over `device_interests`' primary key, so each stream reads
    /// `SEARCH device_interests USING PRIMARY KEY (interest_id=? AND device_id>?)` in device order without
    /// sorting. The comment makes the SQL text (the cache key) distinct per stream position, so a page with k
    /// interests holds k cached statements open side by side.
    static func interestStreamSQL(_ index: Int) -> String {
        "SELECT device_id FROM device_interests WHERE interest_id = ? AND device_id > ? ORDER BY device_id /* \(index) */"
    }

    /// Whether the device is invalidated, then `TargetSQL`'s columns.
    static let targetLookupSQL = "SELECT invalidated_at, \(TargetSQL.columns(of: "devices")) FROM devices WHERE id = ?"

    /// The union of the interests' subscribers as a k-way merge of per-interest index ranges: it reads about
    /// `limit` rows per interest stream at most and holds only the current head of each stream, never the whole
    /// subscriber set (a `DISTINCT … IN (…) ORDER BY` would sort every remaining row on every page).
    package static func interestTargets(
        _ connection: SQLiteConnection, instanceID: String, interests: [String], after cursor: Int64, limit: Int
    ) throws -> TargetPage {
        var interestIDs: [Int64] = []
        for name in Set(interests) {
            if let id = try connection.first(
                "SELECT id FROM interests WHERE instance_id = ? AND name = ?", [.text(instanceID), .text(name)],
                { $0.int64(0) })
            {
                interestIDs.append(id)
            }
        }
        var streams: [Statement] = []
        defer { for stream in streams { stream.reset() } }
        var heads: [Int64?] = []
        for (index, interestID) in interestIDs.enumerated() {
            let stream = try connection.cached(interestStreamSQL(index))
            streams.append(stream)
            try stream.bind([.integer(interestID), .integer(cursor)])
            heads.append(try stream.step() ? stream.int64(0) : nil)
        }

        let lookup = try connection.cached(targetLookupSQL)
        var targets: [Target] = []
        targets.reserveCapacity(limit)
        var examined = cursor
        while targets.count < limit {
            // k is at most 100 (Beams' limit), so a linear minimum is as fast as a heap and simpler.
            var next: Int64?
            for case let head? in heads where next == nil || head < next! { next = head }
            guard let ref = next else { break }
            // Advance every stream positioned on this device: that is the de-duplication.
            for index in heads.indices where heads[index] == ref {
                heads[index] = try streams[index].step() ? streams[index].int64(0) : nil
            }
            examined = ref
            defer { lookup.reset() }
            try lookup.bind([.integer(ref)])
            guard try lookup.step(), lookup.isNull(0) else { continue }  // deleted or invalidated
            targets.append(try TargetSQL.target(SQLiteRow(statement: lookup), ref: ref, from: 1))
        }
        let isLast = heads.allSatisfy { $0 == nil }
        return TargetPage(targets: targets, cursor: examined, isLast: isLast)
    }

    /// Every valid device of the users, in device order. Each device has at most one user, so there is nothing to
    /// de-duplicate; SQLite seeks `devices_by_user` per user and sorts only the remaining devices of these users
    /// (at most users × devices-per-user rows, bounded by the publish limits).
    package static func userTargets(
        _ connection: SQLiteConnection, instanceID: String, users: [String], after cursor: Int64, limit: Int
    ) throws -> TargetPage {
        var targets: [Target] = []
        targets.reserveCapacity(limit)
        var more = false
        try connection.query(
            """
            SELECT id, \(TargetSQL.columns(of: "devices")) FROM devices
            WHERE instance_id = ? AND user_id IN (SELECT value FROM json_each(?)) AND id > ? AND invalidated_at IS NULL
            ORDER BY id LIMIT ?
            """,
            [.text(instanceID), .text(try encodeTargets(users)), .integer(cursor), .integer(Int64(limit) + 1)]
        ) { row in
            guard targets.count < limit else {
                more = true
                return
            }
            targets.append(try TargetSQL.target(SQLiteRow(statement: row), ref: row.int64(0), from: 1))
        }
        return TargetPage(targets: targets, cursor: targets.last?.ref ?? cursor, isLast: !more)
    }
}
