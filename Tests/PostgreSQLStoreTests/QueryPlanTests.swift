import Foundation
import PushStore
import XCTest

@testable import PostgreSQLStore

/// The interest page reads bounded index ranges on both sides of the join, in the generic plan a prepared
/// statement switches to after five runs as well as in a custom one.
final class PostgreSQLQueryPlanTests: PostgreSQLTestCase {
    func testInterestPageIsBoundedIndexScansInCustomAndGenericPlans() async throws {
        let store = try await openNode(poolSize: 1)
        try await store.close()
        let connection = try PGConnection(connectionString: connectionString)
        defer { connection.close() }
        // 20,000 devices: all follow "news", every tenth one "sparse", the rest of the follows spread over ten more
        // interests; statistics gathered. Big enough that a scan of `devices` from its start, or of
        // `device_interests_by_device` filtering on the interest, would show in the plan. Loaded with triggers off
        // (`session_replication_role`): the per-row count triggers, which no plan below reads, made this load take
        // minutes, one update of the same count row per inserted row.
        try connection.execute(
            """
            SET session_replication_role = replica;
            INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
            SELECT 'apns-' || g, 'i', 'apns', lpad(to_hex(g), 64, '0'), 'production', 0, 0 FROM generate_series(1, 20000) g;
            INSERT INTO interests (instance_id, name) SELECT 'i', 'other' || g FROM generate_series(0, 9) g;
            INSERT INTO interests (instance_id, name) VALUES ('i', 'news'), ('i', 'sparse');
            INSERT INTO device_interests (interest_id, device_id)
                SELECT i.id, d.id FROM devices d JOIN interests i ON i.name = 'news'
                    OR (i.name = 'sparse' AND d.id % 10 = 0) OR i.name = 'other' || (d.id % 10);
            SET session_replication_role = DEFAULT;
            ANALYZE
            """)
        for (interest, cursor) in [("news", 10_000), ("sparse", 10_000), ("sparse", 0)] {
            let sql =
                "EXPLAIN "
                + PostgreSQLPushStore.interestPageSQL
                .replacingOccurrences(
                    of: "$1::bigint[]", with: "ARRAY(SELECT id FROM interests WHERE name = '\(interest)')"
                )
                .replacingOccurrences(of: "$2", with: String(cursor)).replacingOccurrences(of: "$3", with: "1001")
            for mode in ["force_custom_plan", "force_generic_plan"] {
                try connection.execute("SET plan_cache_mode = \(mode)")
                let plan = try connection.query(sql)
                let text = plan.map { plan.text($0, 0) }.joined(separator: "\n")
                let context = "\(interest) after \(cursor), \(mode):\n\(text)"
                XCTAssertFalse(text.contains("Seq Scan on devices"), context)
                XCTAssertFalse(text.contains("Seq Scan on device_interests"), context)
                XCTAssertTrue(
                    text.contains("Index Cond: ((id > \(cursor)) AND (id <= "),
                    "devices bounded on both sides: \(context)")
                if interest == "sparse" { XCTAssertTrue(text.contains("device_interests_pkey"), context) }
            }
        }
    }

    /// The claim ranks instances by their runs on the node (`ClaimPreference`), so it sorts the claimable jobs
    /// instead of taking the first by id: it must still read only `publish_jobs_open` (unfinished jobs), never the
    /// finished history, in the generic plan as in a custom one.
    func testClaimReadsOnlyTheOpenJobsIndexWhenRankingInstances() async throws {
        let store = try await openNode(poolSize: 1)
        try await store.close()
        let connection = try PGConnection(connectionString: connectionString)
        defer { connection.close() }
        // 20,000 finished jobs of five instances and 50 queued ones, statistics gathered.
        try connection.execute(
            """
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at, state, finished_at)
            SELECT 'i' || (g % 5), 'p' || g, 'interests', ARRAY['news'], '\\x00'::bytea, g,
                CASE WHEN g > 19950 THEN 'queued' ELSE 'finished' END, CASE WHEN g > 19950 THEN NULL ELSE g END
            FROM generate_series(1, 20000) g;
            ANALYZE
            """)
        try connection.execute(
            """
            PREPARE claim(bigint, text, bigint, text[], bigint[], bigint) AS \(PostgreSQLPushStore.claimSQL)
            """)
        for only in [0, 1] {
            for mode in ["force_custom_plan", "force_generic_plan"] {
                try connection.execute("SET plan_cache_mode = \(mode)")
                let plan = try connection.query(
                    "EXPLAIN EXECUTE claim(30000, 'w', 60000, ARRAY['i1', 'i2'], ARRAY[8, 1], \(only))")
                let text = plan.map { plan.text($0, 0) }.joined(separator: "\n")
                let context = "only absent \(only), \(mode):\n\(text)"
                XCTAssertFalse(text.contains("Seq Scan on publish_jobs"), context)
                XCTAssertTrue(text.contains("publish_jobs_open"), context)
                XCTAssertTrue(text.contains("LockRows"), "FOR UPDATE SKIP LOCKED: \(context)")
            }
        }
        // And it claims what the ranking says: instance i3 (no runs) before the older jobs of i1 and i2.
        let claimed = try connection.query("EXECUTE claim(30000, 'w', 60000, ARRAY['i1', 'i2'], ARRAY[8, 1], 0)")
        XCTAssertEqual(claimed.map { claimed.text($0, 1) }, ["i3"])
    }
}
