import Foundation
import Locking
import PushStore
import StoreSQL

extension PostgreSQLPushStore: DeviceTransfer {
    package func exportDevices(
        instanceID: String?, after: Int64, pageSize: Int, page: @escaping @Sendable ([ExportedDevice]) throws -> Bool
    ) async throws {
        let connectionString = self.connectionString
        let limit = max(1, pageSize)
        // A connection and thread of its own: the snapshot lasts as long as the consumer takes, which must hold
        // none of the pool's connections.
        try await OwnThread.run(named: "store-pg-export") {
            do {
                let connection = try PGConnection(connectionString: connectionString)
                defer { connection.close() }
                try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                try TransferSQL.export(
                    instanceID: instanceID, after: after, limit: limit, on: connection,
                    extras: { refs in try Self.extras(connection, refs: refs) }, page: page)
                try connection.execute("COMMIT")
            } catch {
                throw StoreUnavailableError(postgreSQL: error) ?? error
            }
        }
    }

    /// The interests and Live Activity tokens of the devices `refs`, by device key (two queries for any number).
    static func extras(_ connection: PGConnection, refs: [Int64]) throws -> TransferSQL.Extras {
        var interests: [Int64: [String]] = [:]
        var tokens: [Int64: [LiveActivityToken]] = [:]
        guard !refs.isEmpty else { return ([:], [:]) }
        let names = try connection.query(
            """
            SELECT di.device_id, i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
            WHERE di.device_id = ANY($1::bigint[])
            """, [.integerArray(refs)])
        for row in 0..<names.rowCount { interests[names.int64(row, 0), default: []].append(names.text(row, 1)) }
        let rows = try connection.query(
            """
            SELECT la.device_id, \(LiveActivitySQL.columns)
            FROM live_activity_tokens la JOIN devices d ON d.id = la.device_id WHERE la.device_id = ANY($1::bigint[])
            """, [.integerArray(refs)])
        for row in 0..<rows.rowCount {
            tokens[rows.int64(row, 0), default: []].append(
                try LiveActivitySQL.token(PGRow(result: rows, row: row), from: 1))
        }
        return (interests, tokens)
    }

    package func importDevices(
        _ records: [DeviceRecord], into instanceID: String, caps: DeviceImportCaps, dryRun: Bool,
        audit: (@Sendable ([DeviceImportOutcome]) -> AuditEntry)?
    ) async throws -> [DeviceImportOutcome] {
        let planner = DeviceImportPlanner(caps: caps)
        if dryRun {
            return try await read { connection in
                planner.plan(
                    records, into: instanceID, facts: try Self.importFacts(connection, records, instanceID, lock: false)
                )
                .map(\.outcome)
            }
        }
        // One transaction of its own per batch (it locks the instance's count row first, as every capped write does,
        // so imports and registrations on any node take turns on the caps); set-based statements, a few per batch.
        return try await writeAlone { connection in
            let steps = planner.plan(
                records, into: instanceID,
                facts: try Self.importFacts(connection, records, instanceID, lock: true))
            try Self.apply(steps, instanceID: instanceID, connection)
            let outcomes = steps.map(\.outcome)
            try AuditLogSQL.append(audit?(outcomes), on: connection)
            return outcomes
        }
    }

    static func importFacts(
        _ connection: PGConnection, _ records: [DeviceRecord], _ instanceID: String, lock: Bool
    ) throws -> DeviceImportPlanner.Facts {
        var facts = DeviceImportPlanner.Facts()
        let instance = PGValue.text(instanceID)
        if lock {
            try connection.run(
                "INSERT INTO instance_device_counts (instance_id, devices) VALUES ($1, 0) ON CONFLICT DO NOTHING",
                [instance])
        }
        let counts = try connection.query(
            "SELECT devices, subscriptions, interests FROM instance_device_counts WHERE instance_id = $1\(lock ? " FOR UPDATE" : "")",
            [instance])
        if counts.rowCount > 0 {
            (facts.devices, facts.subscriptions, facts.interests) = (
                counts.int64(0, 0), counts.int64(0, 1), counts.int64(0, 2)
            )
        }
        let found = try connection.query(
            """
            SELECT \(DeviceSQL.columns) FROM devices
            WHERE instance_id = $1 AND (platform, token) IN (SELECT * FROM unnest($2::text[], $3::text[]))
            """,
            [
                instance, .textArray(records.map { $0.device.platform.rawValue }),
                .textArray(records.map(\.device.token)),
            ])
        let rows = try (0..<found.rowCount).map { try DeviceSQL.device(PGRow(result: found, row: $0)) }
        let (interests, tokens) = try extras(connection, refs: rows.map(\.ref))
        var users = Set(records.compactMap(\.device.userID))
        for row in rows {
            if let user = row.device.userID { users.insert(user) }
            facts.existing[DeviceKey(platform: row.device.platform, token: row.device.token)] = (
                row.ref,
                DeviceRecord(
                    device: row.device, interests: (interests[row.ref] ?? []).sorted(),
                    liveActivityTokens: (tokens[row.ref] ?? []).sorted(by: DeviceRecord.order))
            )
        }
        let ids = records.filter { facts.existing[$0.key] == nil && !$0.device.id.isEmpty }.map(\.device.id)
        if !ids.isEmpty {
            let taken = try connection.query(
                "SELECT public_id FROM devices WHERE public_id = ANY($1::text[])", [.textArray(ids)])
            facts.takenIDs = Set(taken.map { taken.text($0, 0) })
        }
        let names = Array(Set(records.flatMap(\.interests)))
        if !names.isEmpty {
            let known = try connection.query(
                "SELECT name FROM interests WHERE instance_id = $1 AND name = ANY($2::text[])",
                [instance, .textArray(names)])
            facts.knownInterests = Set(known.map { known.text($0, 0) })
        }
        if !users.isEmpty {
            let counted = try connection.query(
                """
                SELECT user_id, count(*) FROM devices
                WHERE instance_id = $1 AND user_id = ANY($2::text[]) AND invalidated_at IS NULL GROUP BY user_id
                """, [instance, .textArray(Array(users))])
            for row in 0..<counted.rowCount { facts.userDevices[counted.text(row, 0)] = counted.int64(row, 1) }
        }
        return facts
    }

    /// Carries out the planner's steps with one statement per kind of change for the whole batch.
    static func apply(_ steps: [DeviceImportPlanner.Step], instanceID: String, _ connection: PGConnection) throws {
        var created: [DeviceRecord] = []
        var updated: [(ref: Int64, record: DeviceRecord)] = []
        var relink: [Int64] = []
        var retoken: [Int64] = []
        for step in steps {
            switch step {
            case .create(let record): created.append(record)
            case .update(let ref, let record, let interestsChanged, let liveActivitiesChanged):
                updated.append((ref, record))
                if interestsChanged { relink.append(ref) }
                if liveActivitiesChanged { retoken.append(ref) }
            case .unchanged, .refused: continue
            }
        }
        var refs: [String: Int64] = [:]
        if !created.isEmpty {
            let result = try connection.query(
                """
                INSERT INTO devices (public_id, instance_id, platform, token, environment, environment_declared, bundle_id,
                    metadata, user_id, created_at, last_registered_at, last_status, last_reason, last_result_at,
                    invalidated_at, time_zone)
                SELECT u.id, $1, u.platform, u.token, u.environment, u.declared, u.bundle, u.metadata, u.usr, u.created,
                       u.registered, u.status, u.reason, u.result_at, u.invalidated, u.zone
                FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::boolean[], $7::text[], $8::text[],
                            $9::text[], $10::bigint[], $11::bigint[], $12::integer[], $13::text[], $14::bigint[],
                            $15::bigint[], $16::text[])
                    AS u(id, platform, token, environment, declared, bundle, metadata, usr, created, registered, status,
                         reason, result_at, invalidated, zone)
                RETURNING id, public_id
                """, [.text(instanceID), .textArray(created.map(\.device.id))] + columns(created.map(\.device)))
            for row in 0..<result.rowCount { refs[result.text(row, 1)] = result.int64(row, 0) }
        }
        if !updated.isEmpty {
            try connection.run(
                """
                UPDATE devices d SET platform = u.platform, token = u.token, environment = u.environment,
                    environment_declared = u.declared, bundle_id = u.bundle, metadata = u.metadata, user_id = u.usr,
                    created_at = u.created, last_registered_at = u.registered, last_status = u.status,
                    last_reason = u.reason, last_result_at = u.result_at, invalidated_at = u.invalidated, time_zone = u.zone
                FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::boolean[], $6::text[], $7::text[],
                            $8::text[], $9::bigint[], $10::bigint[], $11::integer[], $12::text[], $13::bigint[],
                            $14::bigint[], $15::text[])
                    AS u(ref, platform, token, environment, declared, bundle, metadata, usr, created, registered, status,
                         reason, result_at, invalidated, zone)
                WHERE d.id = u.ref
                """, [.integerArray(updated.map(\.ref))] + columns(updated.map(\.record.device)))
        }
        // Interests: changed sets are written whole again (their rows go first; a name losing its last follower
        // goes with it and comes back below if still wanted).
        if !relink.isEmpty {
            try connection.run(
                "DELETE FROM device_interests WHERE device_id = ANY($1::bigint[])", [.integerArray(relink)])
        }
        var linkRefs: [Int64?] = []
        var linkNames: [String?] = []
        let relinked = Set(relink)
        for record in created {
            guard let ref = refs[record.device.id] else { continue }
            for name in record.interests { linkRefs.append(ref); linkNames.append(name) }
        }
        for (ref, record) in updated where relinked.contains(ref) {
            for name in record.interests { linkRefs.append(ref); linkNames.append(name) }
        }
        if !linkNames.isEmpty {
            let distinct = Array(Set(linkNames.compactMap { $0 })).sorted()
            try connection.run(
                """
                INSERT INTO interests (instance_id, name) SELECT $1, name FROM unnest($2::text[]) AS n(name)
                ON CONFLICT (instance_id, name) DO NOTHING
                """, [.text(instanceID), .textArray(distinct)])
            try connection.run(
                """
                INSERT INTO device_interests (interest_id, device_id)
                SELECT i.id, u.ref FROM unnest($2::bigint[], $3::text[]) AS u(ref, name)
                JOIN interests i ON i.instance_id = $1 AND i.name = u.name
                ON CONFLICT DO NOTHING
                """, [.text(instanceID), .integerArray(linkRefs), .textArray(linkNames)])
        }
        // Live Activity tokens: likewise.
        if !retoken.isEmpty {
            try connection.run(
                "DELETE FROM live_activity_tokens WHERE device_id = ANY($1::bigint[])", [.integerArray(retoken)])
        }
        var tokenRefs: [Int64?] = []
        var tokens: [LiveActivityToken] = []
        for record in created {
            guard let ref = refs[record.device.id] else { continue }
            for token in record.liveActivityTokens { tokenRefs.append(ref); tokens.append(token) }
        }
        let retokened = Set(retoken)
        for (ref, record) in updated where retokened.contains(ref) {
            for token in record.liveActivityTokens { tokenRefs.append(ref); tokens.append(token) }
        }
        if !tokens.isEmpty {
            try connection.run(
                """
                INSERT INTO live_activity_tokens (device_id, instance_id, kind, attributes_type, activity_id, token,
                                                  reference, expires_at, created_at, updated_at)
                SELECT u.ref, $1, u.kind, u.attributes_type, u.activity_id, u.token, u.reference, u.expires_at,
                       u.created_at, u.updated_at
                FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[],
                            $9::bigint[], $10::bigint[])
                    AS u(ref, kind, attributes_type, activity_id, token, reference, expires_at, created_at, updated_at)
                """,
                [
                    .text(instanceID), .integerArray(tokenRefs), .textArray(tokens.map(\.kind.rawValue)),
                    .textArray(tokens.map(\.attributesType)), .textArray(tokens.map(\.activityID)),
                    .textArray(tokens.map(\.token)), .textArray(tokens.map(\.reference)),
                    .integerArray(tokens.map { $0.expiresAt?.millisecondsSince1970 }),
                    .integerArray(tokens.map { $0.createdAt.millisecondsSince1970 }),
                    .integerArray(tokens.map { $0.updatedAt.millisecondsSince1970 }),
                ])
        }
    }

    /// The arrays of the device columns from `platform` to `time_zone`, as the import's statements take them.
    private static func columns(_ devices: [Device]) -> [PGValue] {
        [
            .textArray(devices.map(\.platform.rawValue)), .textArray(devices.map(\.token)),
            .textArray(devices.map(\.environment.rawValue)),
            .textArray(devices.map { $0.environmentDeclared ? "t" : "f" }),
            .textArray(devices.map(\.bundleID)), .textArray(devices.map(\.metadata)), .textArray(devices.map(\.userID)),
            .integerArray(devices.map { $0.createdAt.millisecondsSince1970 }),
            .integerArray(devices.map { $0.lastRegisteredAt.millisecondsSince1970 }),
            .integerArray(devices.map { $0.lastResult.map { Int64($0.status) } }),
            .textArray(devices.map(\.lastResult?.reason)),
            .integerArray(devices.map { $0.lastResult?.at.millisecondsSince1970 }),
            .integerArray(devices.map { $0.invalidatedAt?.millisecondsSince1970 }), .textArray(devices.map(\.timeZone)),
        ]
    }
}
