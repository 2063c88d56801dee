import Foundation

/// What the store move copies, table by table, and how each backend stores each column: the one place that knows
/// both schemas (`SQLiteStore/Schema.swift`, `PostgreSQLStore/PostgreSQLSchema.swift`). Every table either backend's
/// migrator creates is either copied here or listed in `skipped` with the reason; the copy refuses a database with a
/// table in neither (`unhandledTables`), so a future migration cannot be skipped silently.
package enum CopyPlan {
    /// The tables in load order (parents before the rows that refer to them).
    package static let tables: [CopyTable] = [
        devices, interests, deviceInterests, liveActivityTokens, publishJobs, publishCounters, publishAnswered, events,
        webhooks, beamsForwards, providerTokens, deviceInvalidations, instanceCounts, publishDayCounts, apiKeys,
        auditLog,
        storedInstances,
    ]

    /// Tables deliberately not copied, per backend, with why.
    package static let skipped: [Backend: [String: String]] = [
        .sqlite: [
            "sqlite_sequence": "SQLite's AUTOINCREMENT counter; device_invalidations' high-water mark is carried over"
        ],
        .postgresql: [
            "schema_migrations": "the migrator's record; the target's own migrator wrote it",
            "nodes": "heartbeats of the source's nodes; the target's nodes write their own",
            "publish_shards": "shards of a publish still being delivered; the copy refuses a source that has any",
        ],
    ]

    /// The tables in `present` (one backend's) that are neither copied nor skipped.
    package static func unhandledTables(_ present: [String], backend: Backend) -> [String] {
        let handled = Set(tables.flatMap { $0.storageTables(backend) }).union((skipped[backend] ?? [:]).keys)
        return present.filter { !handled.contains($0) }.sorted()
    }

    /// The columns in `present` of one copied storage table that the plan neither reads nor deliberately drops
    /// (a column a later migration added); `nil` when the plan does not copy `table` on `backend`.
    package static func unhandledColumns(_ present: [String], table: String, backend: Backend) -> [String]? {
        guard let copy = tables.first(where: { $0.storageTables(backend).contains(table) }),
            let known = copy.storageColumns(backend)[table]
        else { return nil }
        return present.filter { !known.contains($0) }.sorted()
    }

    static let devices = CopyTable(
        name: "devices", key: ["id"],
        columns: [
            .init("id", .integer), .init("public_id", .text), .init("instance_id", .text), .init("platform", .text),
            .init("token", .text), .init("environment", .text), .init("environment_declared", .boolean),
            .init("bundle_id", .text), .init("metadata", .text), .init("user_id", .text), .init("created_at", .integer),
            .init("last_registered_at", .integer), .init("last_status", .integer), .init("last_reason", .text),
            .init("last_result_at", .integer), .init("invalidated_at", .integer), .init("time_zone", .text),
        ], identity: true)

    static let interests = CopyTable(
        name: "interests", key: ["id"],
        columns: [
            .init("id", .integer), .init("instance_id", .text), .init("name", .text),
        ], identity: true)

    static let deviceInterests = CopyTable(
        name: "device_interests", key: ["interest_id", "device_id"],
        columns: [
            .init("interest_id", .integer), .init("device_id", .integer),
        ])

    static let liveActivityTokens = CopyTable(
        name: "live_activity_tokens", key: ["id"],
        columns: [
            .init("id", .integer), .init("device_id", .integer), .init("instance_id", .text), .init("kind", .text),
            .init("attributes_type", .text), .init("activity_id", .text), .init("token", .text),
            .init("reference", .text), .init("expires_at", .integer), .init("created_at", .integer),
            .init("updated_at", .integer),
        ], identity: true)

    /// `state` carries PostgreSQL's six states; SQLite keeps `cancelled` and `expired` as `finished` plus `ended_as`
    /// (`Schema.scheduledPublishes`). PostgreSQL's `shards` (how many shards a publish was split into) has no SQLite
    /// column: a copy to SQLite drops it (it only matters while the shards exist, and a source with shards is refused).
    static let publishJobs = CopyTable(
        name: "publish_jobs", key: ["id"],
        columns: [
            .init("id", .integer), .init("instance_id", .text), .init("publish_id", .text), .init("kind", .text),
            .init("targets", .textList), .init("payload", .bytes), .init("webhook_url", .text),
            .init(
                "state", .text, sqliteRead: "COALESCE(ended_as, state)",
                sqliteWrite: [
                    ("state", "CASE WHEN ? IN ('cancelled', 'expired') THEN 'finished' ELSE ? END"),
                    ("ended_as", "CASE WHEN ? IN ('cancelled', 'expired') THEN ? END"),
                ]),
            .init("created_at", .integer), .init("started_at", .integer), .init("finished_at", .integer),
            .init("lease_owner", .text), .init("lease_expires_at", .integer), .init("cursor", .integer),
            .init("attempts", .integer), .init("targets_total", .integer), .init("summary", .text),
            .init("not_before", .integer), .init("cancel_requested", .boolean), .init("trace_parent", .text),
            .init("trace_state", .text),
        ], identity: true, postgresqlDropped: ["shards"])

    static let publishCounters = CopyTable(
        name: "publish_counters", key: ["job_id", "name"],
        columns: [
            .init("job_id", .integer), .init("name", .text), .init("value", .integer),
        ])

    /// A job's answered refs above its cursor: a row is the range `ref ... coalesce(last_ref, ref)`
    /// (`StoreSQL/AnsweredRanges.swift`), copied as it is on both backends.
    static let publishAnswered = CopyTable(
        name: "publish_answered", key: ["job_id", "ref"],
        columns: [
            .init("job_id", .integer), .init("ref", .integer), .init("last_ref", .integer),
        ])

    static let events = CopyTable(
        name: "events", key: ["instance_id", "publish_id", "kind", "device_id"],
        columns: [
            .init("instance_id", .text), .init("publish_id", .text), .init("kind", .integer), .init("device_id", .text),
            .init("user_id", .text), .init("at", .integer),
        ])

    static let webhooks = CopyTable(
        name: "webhooks", key: ["id"],
        columns: [
            .init("id", .integer), .init("url", .text), .init("body", .bytes), .init("headers", .text),
            .init("state", .text), .init("attempts", .integer), .init("next_attempt_at", .integer),
            .init("created_at", .integer), .init("finished_at", .integer), .init("last_error", .text),
        ], identity: true)

    /// The Beams bridge's outbox (forwards of publishes, device retirements), pending and finished alike.
    static let beamsForwards = CopyTable(
        name: "beams_forwards", key: ["id"],
        columns: [
            .init("id", .integer), .init("instance_id", .text), .init("kind", .text), .init("key", .text),
            .init("body", .bytes), .init("state", .text), .init("attempts", .integer),
            .init("next_attempt_at", .integer), .init("created_at", .integer), .init("finished_at", .integer),
            .init("upstream_id", .text), .init("last_error", .text),
        ], identity: true)

    static let providerTokens = CopyTable(
        name: "apns_provider_tokens", key: ["team_id", "key_id"],
        columns: [
            .init("team_id", .text), .init("key_id", .text), .init("jwt", .text), .init("issued_at", .integer),
            .init("updated_at", .integer),
        ])

    /// The daily publish quota's counts: copied, so a store moved during the day keeps the day's count.
    static let publishDayCounts = CopyTable(
        name: "publish_day_counts", key: ["instance_id", "day"],
        columns: [.init("instance_id", .text), .init("day", .integer), .init("publishes", .integer)])

    /// Keys move with the store: a moved instance keeps its scoped keys (digests) and rolled Beams secrets (sealed
    /// with the same key-encryption key, which the target's config must name too).
    static let apiKeys = CopyTable(
        name: "api_keys", key: ["instance_id", "key_id"],
        columns: [
            .init("instance_id", .text), .init("key_id", .text), .init("kind", .text), .init("label", .text),
            .init("scopes", .text), .init("secret_digest", .text), .init("sealed_secret", .text),
            .init("not_before", .integer), .init("expires_at", .integer), .init("created_at", .integer),
            .init("last_used_at", .integer), .init("revoked_at", .integer), .init("rotated_from", .text),
        ])

    /// The audit log moves whole; `seq` is the read cursor, so its counter's high-water mark moves too.
    static let auditLog = CopyTable(
        name: "audit_log", key: ["seq"],
        columns: [
            .init("seq", .integer), .init("at", .integer), .init("instance_id", .text), .init("actor", .text),
            .init("source", .text), .init("action", .text), .init("target", .text), .init("outcome", .text),
            .init("request_id", .text),
        ], identity: true, carriesSequence: true)

    /// Run-time instances move with the store, tombstones included (the set's version must not go back); their
    /// sealed definitions open only with the same key-encryption key, which the target's config must name too.
    static let storedInstances = CopyTable(
        name: "stored_instances", key: ["id"],
        columns: [
            .init("id", .text), .init("definition", .text), .init("version", .integer), .init("created_at", .integer),
            .init("updated_at", .integer), .init("deleted_at", .integer),
        ])

    /// Ids are never reused (a feed cursor must not skip a later row), so the id counter's high-water mark moves
    /// with the rows (`carriesSequence`).
    static let deviceInvalidations = CopyTable(
        name: "device_invalidations", key: ["id"],
        columns: [
            .init("id", .integer), .init("instance_id", .text), .init("device_id", .text), .init("platform", .text),
            .init("token_mask", .text), .init("user_id", .text), .init("reason", .text), .init("status", .integer),
            .init("provider_at", .integer), .init("at", .integer), .init("notified", .boolean),
        ], identity: true, carriesSequence: true)

    /// The per-instance counts the caps read: one PostgreSQL table (`instance_device_counts`), two on SQLite
    /// (`instance_device_counts` and `instance_interest_counts`; a missing row counts 0). Loaded last, over what
    /// the target's triggers counted while the rows went in, so the copy holds the source's values exactly.
    static let instanceCounts = CopyTable(
        name: "instance_counts", key: ["instance_id"],
        columns: [
            .init("instance_id", .text), .init("devices", .integer), .init("subscriptions", .integer),
            .init("interests", .integer),
        ],
        sqlite: .init(
            tables: ["instance_device_counts", "instance_interest_counts"],
            select: """
                SELECT k.instance_id, COALESCE(d.devices, 0), COALESCE(i.subscriptions, 0), COALESCE(i.interests, 0)
                FROM (SELECT instance_id FROM instance_device_counts
                      UNION SELECT instance_id FROM instance_interest_counts) k
                LEFT JOIN instance_device_counts d ON d.instance_id = k.instance_id
                LEFT JOIN instance_interest_counts i ON i.instance_id = k.instance_id
                ORDER BY k.instance_id
                """,
            inserts: [
                "INSERT INTO instance_device_counts (instance_id, devices) VALUES (?1, ?2)",
                "INSERT INTO instance_interest_counts (instance_id, subscriptions, interests) VALUES (?1, ?3, ?4)",
            ],
            beforeLoad: ["DELETE FROM instance_device_counts", "DELETE FROM instance_interest_counts"],
            columns: [
                "instance_device_counts": ["instance_id", "devices"],
                "instance_interest_counts": ["instance_id", "subscriptions", "interests"],
            ]),
        postgresqlTable: "instance_device_counts")

    /// The triggers that keep `instance_counts` on PostgreSQL: switched off while the rows go in (each would update
    /// one hot row per inserted row, millions of versions of it in one transaction), on again before COMMIT.
    package static let postgresqlCountTriggers: [(table: String, trigger: String)] = [
        ("devices", "devices_counted_on_insert"), ("interests", "interests_counted"),
        ("device_interests", "subscriptions_counted_on_insert"),
    ]
}

/// The two backends.
package enum Backend: String, Sendable, Hashable, CustomStringConvertible {
    case sqlite, postgresql
    package var description: String { self == .sqlite ? "SQLite" : "PostgreSQL" }
}

/// How a value is carried (`PortableValue`), whatever the backend's column type.
package enum PortableType: Sendable {
    /// SQLite INTEGER, PostgreSQL bigint/integer/smallint (times are milliseconds since 1970 on both).
    case integer
    /// TEXT / text.
    case text
    /// BLOB / bytea.
    case bytes
    /// SQLite INTEGER 0/1, PostgreSQL boolean.
    case boolean
    /// SQLite TEXT holding a JSON array of strings, PostgreSQL text[].
    case textList
}

/// One portable column.
package struct CopyColumn: Sendable {
    package let name: String
    package let type: PortableType
    /// SQLite's expression for the value when it is not the column itself.
    package let sqliteRead: String?
    /// SQLite's columns and the expressions that store the value (each `?` is the value), when not one column.
    package let sqliteWrite: [(column: String, expression: String)]?

    init(
        _ name: String, _ type: PortableType, sqliteRead: String? = nil,
        sqliteWrite: [(column: String, expression: String)]? = nil
    ) {
        self.name = name
        self.type = type
        self.sqliteRead = sqliteRead
        self.sqliteWrite = sqliteWrite
    }
}

/// One portable table: its columns, its key, and each backend's SQL for reading it in key order and writing it.
package struct CopyTable: Sendable {
    /// How SQLite stores the table.
    package struct SQLiteMapping: Sendable {
        /// The storage tables.
        package let tables: [String]
        /// Reads every row, portable columns in order, in key order.
        package let select: String
        /// Writes one row; `?N` is portable column N (1-based).
        package let inserts: [String]
        /// Runs before the rows go in (after the tables before it were loaded).
        package let beforeLoad: [String]
        /// Each storage table's columns (every one of them read or written above).
        package let columns: [String: Set<String>]
    }

    package let name: String
    package let columns: [CopyColumn]
    package let key: [String]
    package let sqlite: SQLiteMapping
    /// PostgreSQL's table (same columns, in the same order).
    package let postgresqlTable: String
    /// The key comes from an identity column (PostgreSQL) whose sequence must move past the copied ids.
    package let identity: Bool
    /// That identity column: the key's one column (`id`, or `seq` for the audit log).
    package var identityColumn: String { key[0] }
    /// The id counter's high-water mark (past deleted rows) is copied too, not just the largest id present.
    package let carriesSequence: Bool
    /// PostgreSQL columns that SQLite has no place for, written as NULL/default on PostgreSQL (see the table).
    package let postgresqlDropped: [String]

    init(
        name: String, key: [String], columns: [CopyColumn], identity: Bool = false, carriesSequence: Bool = false,
        postgresqlDropped: [String] = [], sqlite: SQLiteMapping? = nil, postgresqlTable: String? = nil
    ) {
        self.name = name
        self.postgresqlDropped = postgresqlDropped
        self.key = key
        self.columns = columns
        precondition(!identity || key.count == 1, "an identity table is keyed by its identity column alone")
        self.identity = identity
        self.carriesSequence = carriesSequence
        self.postgresqlTable = postgresqlTable ?? name
        self.sqlite = sqlite ?? Self.defaultSQLite(name: name, key: key, columns: columns)
    }

    /// Each storage table's columns on `backend` that the plan knows.
    package func storageColumns(_ backend: Backend) -> [String: Set<String>] {
        backend == .sqlite ? sqlite.columns : [postgresqlTable: Set(columns.map(\.name) + postgresqlDropped)]
    }

    /// The tables this portable table occupies on `backend`.
    package func storageTables(_ backend: Backend) -> [String] {
        backend == .sqlite ? sqlite.tables : [postgresqlTable]
    }

    /// The statement PostgreSQL streams the rows with: portable columns in order (bytes as hex, lists as JSON, so
    /// that every field reads as plain text), text keys compared byte by byte as SQLite does.
    package var postgresqlCopyOut: String {
        let expressions = columns.map { column -> String in
            switch column.type {
            case .bytes: return "encode(\(column.name), 'hex')"
            case .textList: return "array_to_json(\(column.name))::text"
            default: return column.name
            }
        }
        let order = key.map { name in
            columns.first { $0.name == name }?.type == .text ? "\(name) COLLATE \"C\"" : name
        }
        return "COPY (SELECT \(expressions.joined(separator: ", ")) FROM \(postgresqlTable) "
            + "ORDER BY \(order.joined(separator: ", "))) TO STDOUT"
    }

    /// The statement PostgreSQL loads the rows with (explicit ids are kept: COPY writes identity columns as given).
    package var postgresqlCopyIn: String {
        "COPY \(postgresqlTable) (\(columns.map(\.name).joined(separator: ", "))) FROM STDIN"
    }

    private static func defaultSQLite(name: String, key: [String], columns: [CopyColumn]) -> SQLiteMapping {
        let select =
            "SELECT \(columns.map { $0.sqliteRead ?? $0.name }.joined(separator: ", ")) FROM \(name) "
            + "ORDER BY \(key.joined(separator: ", "))"
        var names: [String] = []
        var values: [String] = []
        for (offset, column) in columns.enumerated() {
            let parameter = "?\(offset + 1)"
            for (storage, expression) in column.sqliteWrite ?? [(column.name, "?")] {
                names.append(storage)
                values.append(expression.replacingOccurrences(of: "?", with: parameter))
            }
        }
        let insert = "INSERT INTO \(name) (\(names.joined(separator: ", "))) VALUES (\(values.joined(separator: ", ")))"
        return SQLiteMapping(
            tables: [name], select: select, inserts: [insert], beforeLoad: [], columns: [name: Set(names)])
    }
}
