import Foundation
import PushStore
import StoreSQL

extension PostgreSQLPushStore {
    /// The target columns (`TargetSQL`'s) of the device `d`.
    static let targetColumns = TargetSQL.columns(of: "d")

    /// One keyset page over the union of interests: per interest, the first `$3` followers after the cursor from the
    /// `(interest_id, device_id)` primary key (an index-only scan that stops after `$3` rows; `ORDER BY interest_id,
    /// device_id` is the primary key's order, so the planner never walks `device_interests_by_device` filtering on
    /// the interest instead), merged, de-duplicated and cut to `$3`; the smallest `$3` refs of the union are among
    /// them. The page's bounds are repeated on the devices side of the join (`d.id > $2` and the page's last
    /// candidate): the planner does not carry them across, and without them a merge join reads `devices` from its
    /// start on every page (~190 ms instead of ~1.3 ms in the middle of a 1M interest).
    static let interestPageSQL = pageSQL(boundedByShard: false)

    /// `interestPageSQL` bounded above by a shard's end (`$4`) as well, in the followers' index scan.
    static let shardPageSQL = pageSQL(boundedByShard: true)

    /// The interest page's text, with the shard's upper bound in the followers' scan or without it: the one place
    /// the statement is written, so the two forms cannot drift apart.
    private static func pageSQL(boundedByShard: Bool) -> String {
        let shardBound = boundedByShard ? " AND device_id <= $4" : ""
        return """
            WITH candidates AS MATERIALIZED (
                SELECT DISTINCT f.device_id
                FROM unnest($1::bigint[]) AS i(id)
                CROSS JOIN LATERAL (
                    SELECT device_id FROM device_interests
                    WHERE interest_id = i.id AND device_id > $2\(shardBound) ORDER BY interest_id, device_id LIMIT $3
                ) AS f
                ORDER BY f.device_id LIMIT $3
            )
            SELECT c.device_id, d.invalidated_at IS NULL AND d.id IS NOT NULL, \(targetColumns)
            FROM candidates c LEFT JOIN devices d
                ON d.id = c.device_id AND d.id > $2 AND d.id <= (SELECT max(device_id) FROM candidates)
            ORDER BY c.device_id
            """
    }

    /// `interestTargets(…through:…)` over the whole subscriber set (a job delivered whole).
    package static func interestTargets(
        _ connection: PGConnection, instanceID: String, interests: [String], after cursor: Int64, limit: Int
    ) throws -> TargetPage {
        try interestTargets(
            connection, instanceID: instanceID, interests: interests, after: cursor, through: .max, limit: limit)
    }

    /// The union of the interests' valid followers after `cursor` up to `through` (a shard's end), each once, in ref
    /// order. The page's cursor is the greatest ref it examined (invalidated or deleted devices included), so they
    /// are not read again.
    static func interestTargets(
        _ connection: PGConnection, instanceID: String, interests: [String], after cursor: Int64,
        through: Int64, limit: Int
    ) throws -> TargetPage {
        let ids = try connection.query(
            "SELECT id FROM interests WHERE instance_id = $1 AND name = ANY($2::text[])",
            [.text(instanceID), .textArray(Array(Set(interests)))])
        guard ids.rowCount > 0 else { return TargetPage(targets: [], cursor: cursor, isLast: true) }
        var parameters: [PGValue] = [
            .integerArray(ids.map { ids.int64($0, 0) }), .integer(cursor), .integer(Int64(limit) + 1),
        ]
        if through != .max { parameters.append(.integer(through)) }
        let rows = try connection.query(through == .max ? interestPageSQL : shardPageSQL, parameters)
        var targets: [Target] = []
        targets.reserveCapacity(min(limit, rows.rowCount))
        var examined = cursor
        for row in 0..<min(limit, rows.rowCount) {
            let ref = rows.int64(row, 0)
            examined = ref
            if rows.bool(row, 1) {
                targets.append(try TargetSQL.target(PGRow(result: rows, row: row), ref: ref, from: 2))
            }
        }
        return TargetPage(targets: targets, cursor: examined, isLast: rows.rowCount <= limit)
    }

    /// Every valid device of the users, in device order, from the `(instance_id, user_id, id)` index; each device
    /// has at most one user, so there is nothing to de-duplicate.
    package static func userTargets(
        _ connection: PGConnection, instanceID: String, users: [String], after cursor: Int64, limit: Int
    ) throws -> TargetPage {
        let rows = try connection.query(
            """
            SELECT d.id, \(targetColumns) FROM devices d
            WHERE d.instance_id = $1 AND d.user_id = ANY($2::text[]) AND d.id > $3 AND d.invalidated_at IS NULL
            ORDER BY d.id LIMIT $4
            """, [.text(instanceID), .textArray(users), .integer(cursor), .integer(Int64(limit) + 1)])
        let targets = try (0..<min(limit, rows.rowCount)).map {
            try TargetSQL.target(PGRow(result: rows, row: $0), ref: rows.int64($0, 0), from: 1)
        }
        return TargetPage(targets: targets, cursor: targets.last?.ref ?? cursor, isLast: rows.rowCount <= limit)
    }
}
