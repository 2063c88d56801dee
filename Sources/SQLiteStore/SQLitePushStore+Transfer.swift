import Foundation
import Locking
import PushStore
import SQL
import StoreSQL

extension SQLitePushStore: DeviceTransfer {
    package func exportDevices(
        instanceID: String?, after: Int64, pageSize: Int, page: @escaping @Sendable ([ExportedDevice]) throws -> Bool
    ) async throws {
        let path = self.path
        let busyTimeout = self.busyTimeout
        let limit = max(1, pageSize)
        // A thread and read-only connection of its own: the export's read transaction lasts as long as its
        // consumer takes, which must hold none of the store's readers.
        try await OwnThread.run(named: "store-export") {
            do {
                let connection = try SQLiteConnection(path: path, readOnly: true)
                do {
                    try connection.configure(busyTimeout: busyTimeout, synchronous: .normal, cacheSizeKiB: nil)
                    // One read transaction: every page comes from the snapshot of its first read.
                    try connection.execute("BEGIN")
                    try TransferSQL.export(
                        instanceID: instanceID, after: after, limit: limit, on: connection,
                        extras: { refs in try Self.exportExtras(connection, refs: refs) }, page: page)
                    try connection.execute("COMMIT")
                    try connection.close()
                } catch {
                    try? connection.close()
                    throw error
                }
            } catch {
                throw StoreUnavailableError(sqlite: error) ?? error
            }
        }
    }

    /// The interests and Live Activity tokens of an export page's devices `refs` (in key order), read by key range:
    /// two queries per page, not per device.
    static func exportExtras(_ connection: SQLiteConnection, refs: [Int64]) throws -> TransferSQL.Extras {
        guard let first = refs.first, let last = refs.last else { return ([:], [:]) }
        var interests: [Int64: [String]] = [:]
        try connection.query(
            """
            SELECT di.device_id, i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
            WHERE di.device_id BETWEEN ? AND ?
            """, [.integer(first), .integer(last)]
        ) { interests[$0.int64(0), default: []].append($0.text(1)) }
        return (interests, try liveActivityTokens(connection, from: first, through: last))
    }

    /// The Live Activity tokens of the devices with keys `from...through`, by device key.
    static func liveActivityTokens(
        _ connection: SQLiteConnection, from: Int64, through: Int64
    ) throws -> [Int64: [LiveActivityToken]] {
        var tokens: [Int64: [LiveActivityToken]] = [:]
        // Each half can use its partial unique index (device_id first).
        let columns = LiveActivitySQL.columns
        try connection.forEachRow(
            """
            SELECT la.device_id, \(raw: columns) FROM live_activity_tokens la JOIN devices d ON d.id = la.device_id
            WHERE la.kind = 'start' AND la.device_id BETWEEN \(from) AND \(through)
            UNION ALL
            SELECT la.device_id, \(raw: columns) FROM live_activity_tokens la JOIN devices d ON d.id = la.device_id
            WHERE la.kind = 'update' AND la.device_id BETWEEN \(from) AND \(through)
            """
        ) { row in
            tokens[try row.decode(0, as: Int64.self), default: []].append(try LiveActivitySQL.token(row, from: 1))
        }
        return tokens
    }

    package func importDevices(
        _ records: [DeviceRecord], into instanceID: String, caps: DeviceImportCaps, dryRun: Bool,
        audit: (@Sendable ([DeviceImportOutcome]) -> AuditEntry)?
    ) async throws -> [DeviceImportOutcome] {
        let planner = DeviceImportPlanner(caps: caps)
        if dryRun {
            return try await read { connection in
                planner.plan(records, into: instanceID, facts: try Self.importFacts(connection, records, instanceID))
                    .map(\.outcome)
            }
        }
        // One transaction for the batch (its cost makes it one of its own: FairBatches lets a first operation
        // exceed the row budget), so the speed of a bulk load comes from few commits.
        return try await write(tenant: instanceID, cost: max(1, records.count * 4)) { connection in
            let steps = planner.plan(
                records, into: instanceID, facts: try Self.importFacts(connection, records, instanceID))
            try Self.apply(steps, instanceID: instanceID, connection)
            let outcomes = steps.map(\.outcome)
            try AuditLogSQL.append(audit?(outcomes), on: connection)
            return outcomes
        }
    }

    /// What the planner needs to know about the batch, read inside the import's transaction.
    static func importFacts(
        _ connection: SQLiteConnection, _ records: [DeviceRecord], _ instanceID: String
    ) throws -> DeviceImportPlanner.Facts {
        var facts = DeviceImportPlanner.Facts()
        var names = Set<String>()
        var users = Set<String>()
        for record in records {
            names.formUnion(record.interests)
            if let user = record.device.userID { users.insert(user) }
            let found = try connection.fetchOne(
                """
                SELECT \(raw: DeviceSQL.columns) FROM devices
                WHERE instance_id = \(instanceID) AND platform = \(record.device.platform.rawValue) \
                AND token = \(record.device.token)
                """, DeviceSQL.device)
            if let (ref, device) = found {
                if let user = device.userID { users.insert(user) }
                let tokens = try liveActivityTokens(connection, from: ref, through: ref)[ref] ?? []
                facts.existing[record.key] = (
                    ref,
                    DeviceRecord(
                        device: device, interests: try InterestSQL.names(deviceRef: ref, on: connection),
                        liveActivityTokens: tokens.sorted(by: DeviceRecord.order))
                )
            } else if !record.device.id.isEmpty,
                try connection.first(
                    "SELECT 1 FROM devices WHERE public_id = ?", [.text(record.device.id)], { _ in true }) != nil
            {
                facts.takenIDs.insert(record.device.id)
            }
        }
        facts.devices =
            try connection.first(
                "SELECT devices FROM instance_device_counts WHERE instance_id = ?", [.text(instanceID)]
            ) { $0.int64(0) } ?? 0
        if let counts = try connection.first(
            "SELECT subscriptions, interests FROM instance_interest_counts WHERE instance_id = ?", [.text(instanceID)],
            { ($0.int64(0), $0.int64(1)) })
        {
            (facts.subscriptions, facts.interests) = counts
        }
        for name in names
        where try connection.first(
            "SELECT 1 FROM interests WHERE instance_id = ? AND name = ?", [.text(instanceID), .text(name)],
            { _ in true }) != nil
        {
            facts.knownInterests.insert(name)
        }
        for user in users {
            facts.userDevices[user] =
                try connection.first(
                    "SELECT count(*) FROM devices WHERE instance_id = ? AND user_id = ? AND invalidated_at IS NULL",
                    [.text(instanceID), .text(user)]
                ) { $0.int64(0) } ?? 0
        }
        return facts
    }

    /// Carries out the planner's steps.
    static func apply(_ steps: [DeviceImportPlanner.Step], instanceID: String, _ connection: SQLiteConnection) throws {
        var interestIDs: [String: Int64] = [:]
        func link(_ ref: Int64, _ names: [String]) throws {
            for name in names {
                let id: Int64
                if let known = interestIDs[name] {
                    id = known
                } else {
                    id = try InterestSQL.id(instanceID: instanceID, name: name, on: connection)
                    interestIDs[name] = id
                }
                try connection.run(
                    "INSERT OR IGNORE INTO device_interests (interest_id, device_id) VALUES (?, ?)",
                    [.integer(id), .integer(ref)])
            }
        }
        func insertTokens(_ ref: Int64, _ tokens: [LiveActivityToken]) throws {
            for token in tokens {
                try connection.run(
                    """
                    INSERT INTO live_activity_tokens (device_id, instance_id, kind, attributes_type, activity_id, token,
                                                      reference, expires_at, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .integer(ref), .text(instanceID), .text(token.kind.rawValue), .text(token.attributesType),
                        .text(token.activityID), .text(token.token), .text(token.reference), .millis(token.expiresAt),
                        .millis(token.createdAt), .millis(token.updatedAt),
                    ])
            }
        }
        for step in steps {
            switch step {
            case .unchanged, .refused:
                continue
            case .create(let record):
                let device = record.device
                try connection.run(
                    """
                    INSERT INTO devices (public_id, instance_id, platform, token, environment, environment_declared,
                        bundle_id, metadata, user_id, created_at, last_registered_at, last_status, last_reason,
                        last_result_at, invalidated_at, time_zone)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [.text(device.id), .text(instanceID)] + values(device))
                let ref = connection.lastInsertRowID
                try link(ref, record.interests)
                try insertTokens(ref, record.liveActivityTokens)
            case .update(let ref, let record, let interestsChanged, let liveActivitiesChanged):
                try connection.run(
                    """
                    UPDATE devices SET platform = ?, token = ?, environment = ?, environment_declared = ?,
                        bundle_id = ?, metadata = ?, user_id = ?, created_at = ?, last_registered_at = ?,
                        last_status = ?, last_reason = ?, last_result_at = ?, invalidated_at = ?, time_zone = ?
                    WHERE id = ?
                    """, values(record.device) + [.integer(ref)])
                if interestsChanged {
                    // Only the names it no longer follows go (and with their last follower, the names themselves).
                    var old: [String] = []
                    try connection.query(
                        """
                        SELECT i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
                        WHERE di.device_id = ?
                        """, [.integer(ref)]
                    ) { old.append($0.text(0)) }
                    let keep = Set(record.interests)
                    for name in old where !keep.contains(name) {
                        try connection.run(
                            """
                            DELETE FROM device_interests WHERE device_id = ?
                            AND interest_id = (SELECT id FROM interests WHERE instance_id = ? AND name = ?)
                            """, [.integer(ref), .text(instanceID), .text(name)])
                        interestIDs[name] = nil
                    }
                    let had = Set(old)
                    try link(ref, record.interests.filter { !had.contains($0) })
                }
                if liveActivitiesChanged {
                    try connection.run("DELETE FROM live_activity_tokens WHERE device_id = ?", [.integer(ref)])
                    try insertTokens(ref, record.liveActivityTokens)
                }
            }
        }
    }

    /// The device's columns from `platform` to `time_zone`, in the order the import's statements name them.
    private static func values(_ device: Device) -> [SQLValue] {
        [
            .text(device.platform.rawValue), .text(device.token), .text(device.environment.rawValue),
            .bool(device.environmentDeclared), .text(device.bundleID), .text(device.metadata), .text(device.userID),
            .millis(device.createdAt), .millis(device.lastRegisteredAt),
            .integer(device.lastResult.map { Int64($0.status) }),
            .text(device.lastResult?.reason), .millis(device.lastResult?.at), .millis(device.invalidatedAt),
            .text(device.timeZone),
        ]
    }
}
