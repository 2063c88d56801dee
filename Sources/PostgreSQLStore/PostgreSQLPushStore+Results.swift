import Foundation
import PushStore
import SQL
import StoreSQL

extension PostgreSQLPushStore {
    /// Records results and applies their effects, one set-based UPDATE per round. The invalidation rule (Apple: a
    /// 410's timestamp is when the token stopped being valid) is in the SQL: a device that registered at or after
    /// the evidence time keeps working, because the app has re-sent the token since.
    ///
    /// One UPDATE … FROM changes each row once, so results are split into rounds in which every device appears at
    /// most once: round k holds each device's k-th result, so a device's results apply in their order and the
    /// outcome equals applying them one by one (as SQLite does).
    ///
    /// The rows are locked first, in ascending id order (`lockDevices`): answers arrive in any order, and two
    /// transactions that lock the same devices in different orders (two nodes' publishes to overlapping devices)
    /// deadlock. Every later round only revisits rows the first one locked.
    /// - Parameter locked: the caller locked the rows already, in id order.
    static func applyDeviceResults(_ results: [DeviceResult], connection: PGConnection, locked: Bool = false) throws {
        guard !results.isEmpty else { return }
        var rounds: [[DeviceResult]] = []
        var occurrences: [Int64: Int] = [:]
        for result in results {
            let round = occurrences[result.device, default: 0]
            occurrences[result.device] = round + 1
            if round == rounds.count { rounds.append([]) }
            rounds[round].append(result)
        }
        if !locked { try lockDevices(rounds[0].map(\.device), connection: connection) }
        for round in rounds {
            var evidence: [Int64?] = []
            var environments: [String?] = []
            for result in round {
                let effect = DeliveryResultSQL.effect(of: result)
                evidence.append(effect.evidence?.millisecondsSince1970)
                environments.append(effect.environment?.rawValue)
            }
            // The devices this round invalidates, read before the UPDATE (their rows are locked): each is logged.
            var dying: [DeviceInvalidation] = []
            if evidence.contains(where: { $0 != nil }) {
                let found = try connection.query(
                    """
                    SELECT \(DeliveryResultSQL.dyingColumns), r.n
                    FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS r(id, evidence, n)
                    JOIN devices d ON d.id = r.id
                    WHERE r.evidence IS NOT NULL AND d.invalidated_at IS NULL AND d.last_registered_at < r.evidence
                    """, [.integerArray(round.map(\.device)), .integerArray(evidence)])
                for row in 0..<found.rowCount {
                    let result = round[Int(found.int64(row, 5)) - 1]
                    dying.append(
                        try DeliveryResultSQL.invalidation(PGRow(result: found, row: row), of: result))
                }
            }
            try connection.run(
                """
                UPDATE devices d SET
                    last_status = r.status, last_reason = r.reason, last_result_at = r.at,
                    invalidated_at = CASE
                        WHEN r.evidence IS NOT NULL AND d.invalidated_at IS NULL AND d.last_registered_at < r.evidence
                        THEN r.at ELSE d.invalidated_at END,
                    environment = COALESCE(r.environment, d.environment)
                FROM unnest($1::bigint[], $2::integer[], $3::text[], $4::bigint[], $5::bigint[], $6::text[])
                    AS r(id, status, reason, at, evidence, environment)
                WHERE d.id = r.id
                """,
                [
                    .integerArray(round.map(\.device)),
                    .integerArray(round.map { Int64(Int32(clamping: $0.status)) }),
                    .textArray(round.map(\.reason)), .integerArray(round.map { $0.at.millisecondsSince1970 }),
                    .integerArray(evidence), .textArray(environments),
                ])
            try logInvalidations(dying, connection: connection)
        }
    }

    /// Appends `records` to the invalidation log, in the caller's transaction.
    package static func logInvalidations(_ records: [DeviceInvalidation], connection: PGConnection) throws {
        guard !records.isEmpty else { return }
        try connection.run(
            """
            INSERT INTO device_invalidations
                (instance_id, device_id, platform, token_mask, user_id, reason, status, provider_at, at)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[],
                                 $7::integer[], $8::bigint[], $9::bigint[])
            """,
            [
                .textArray(records.map(\.instanceID)), .textArray(records.map(\.deviceID)),
                .textArray(records.map(\.platform)), .textArray(records.map(\.maskedToken)),
                .textArray(records.map(\.userID)), .textArray(records.map(\.reason)),
                .integerArray(records.map { Int64(Int32(clamping: $0.status)) }),
                .integerArray(records.map { $0.providerTimestamp?.millisecondsSince1970 }),
                .integerArray(records.map { $0.at.millisecondsSince1970 }),
            ])
    }

    /// Locks the rows of `devices` (those that exist) for update, in ascending id order: every transaction that
    /// writes several device rows takes them in this one order, so no two of them wait for each other in a circle.
    /// `FOR NO KEY UPDATE` is the lock the UPDATE itself takes: a new interest's foreign key check (`FOR KEY SHARE`)
    /// does not wait for it.
    static func lockDevices(_ devices: [Int64], connection: PGConnection) throws {
        guard !devices.isEmpty else { return }
        // The sort below the lock: PostgreSQL locks the rows in the order the ORDER BY returns them.
        try connection.query(
            "SELECT 1 FROM devices WHERE id = ANY($1::bigint[]) ORDER BY id FOR NO KEY UPDATE",
            [.integerArray(devices)])
    }

    /// Whether the publish targeted the device: a users publish names at most 1000 users (`= ANY` stops at the first
    /// match), an interests publish at most 100 interests, each looked up by (instance, name) and then
    /// (interest, device).
    package static func publishTargets(userID: String?, ref: Int64?, instanceID: String) -> SQLQuery {
        """
        CASE WHEN kind = 'users' THEN
            \(userID)::text IS NOT NULL AND \(userID)::text = ANY(targets)
        ELSE
            \(ref) IS NOT NULL AND EXISTS (
                SELECT 1 FROM interests i
                JOIN device_interests di ON di.interest_id = i.id AND di.device_id = \(ref)
                WHERE i.instance_id = \(instanceID) AND i.name = ANY(publish_jobs.targets))
        END
        """
    }

    package func recordDeviceResults(_ results: [DeviceResult]) async throws {
        guard !results.isEmpty else { return }
        // In a transaction of its own: in a group, another write's device rows would be locked out of order.
        try await writeAlone { try Self.applyDeviceResults(results, connection: $0) }
    }

    package func recordEvents(_ events: [ReportingEvent]) async throws -> Int {
        guard !events.isEmpty else { return 0 }
        return try await write(tenant: events.first?.instanceID, cost: events.count) { connection in
            try connection.run(
                """
                INSERT INTO events (instance_id, publish_id, kind, device_id, user_id, at)
                SELECT * FROM unnest($1::text[], $2::text[], $3::smallint[], $4::text[], $5::text[], $6::bigint[])
                ON CONFLICT DO NOTHING
                """,
                [
                    .textArray(events.map(\.instanceID)), .textArray(events.map(\.publishID)),
                    .integerArray(events.map { Int64($0.kind.rawValue) }), .textArray(events.map(\.deviceID)),
                    .textArray(events.map(\.userID)), .integerArray(events.map { $0.at.millisecondsSince1970 }),
                ])
        }
    }

}
