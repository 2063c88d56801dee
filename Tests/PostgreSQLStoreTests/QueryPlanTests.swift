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

    /// A claim that ranks instances by their runs on the node (`ClaimPreference`) seeks each instance's oldest
    /// claimable job through `publish_jobs_open_by_instance` (step 18) and sorts only those candidates, one per
    /// instance: sorting every claimable job cost 208 ms per claim behind 33,000 queued publishes. Checked on the
    /// executed plan (EXPLAIN ANALYZE, rolled back), in the generic plan as in a custom one, with and without
    /// `onlyAbsentInstances`: the backlog below is 2,000 queued jobs of five instances and one newest job of a sixth,
    /// after 100,000 finished ones.
    func testRankedClaimSeeksEachInstanceInsteadOfSortingTheBacklog() async throws {
        let connection = try await claimDatabase()
        defer { connection.close() }
        try connection.execute(
            "PREPARE claim(bigint, text, bigint, text[], bigint[], bigint) AS \(PostgreSQLPushStore.claimSQL)")
        for only in [0, 1] {
            for mode in ["force_custom_plan", "force_generic_plan"] {
                let context = "only absent \(only), \(mode)"
                let plan = try executedPlan(
                    "EXECUTE claim(30000, 'w', 60000, ARRAY['i1', 'i2'], ARRAY[8, 1], \(only))", mode: mode,
                    on: connection)
                let nodes = Self.nodes(of: plan)
                let reads = nodes.filter { $0["Relation Name"] as? String == "publish_jobs" }
                XCTAssertFalse(reads.contains { $0["Node Type"] as? String == "Seq Scan" }, "\(context): \(plan)")
                // Every read of the queue is a seek of the by-instance index, but the update's own row by its key.
                let indexes = Set(reads.compactMap { $0["Index Name"] as? String })
                XCTAssertEqual(indexes, ["publish_jobs_open_by_instance", "publish_jobs_pkey"], "\(context): \(plan)")
                let filtered = reads.map { ($0["Rows Removed by Filter"] as? Int) ?? 0 }.reduce(0, +)
                XCTAssertLessThanOrEqual(filtered, 10, "rows read and thrown away, \(context): \(plan)")
                let sorts = nodes.filter { $0["Node Type"] as? String == "Sort" }
                XCTAssertEqual(sorts.count, 1, "\(context): \(plan)")
                for sort in sorts {
                    let input = ((sort["Plans"] as? [[String: Any]]) ?? []).map { $0["Actual Rows"] as? Int ?? -1 }
                    XCTAssertEqual(input.count, 1, "\(context): \(plan)")
                    XCTAssertTrue(
                        input.allSatisfy { (0...6).contains($0) }, "one candidate per instance, \(context): \(input)")
                }
                // The lock is taken in one seek: the first ranked candidate's (no other instance's rows locked).
                let locks = nodes.filter { $0["Node Type"] as? String == "LockRows" }
                XCTAssertEqual(locks.map { $0["Actual Loops"] as? Int }, [1], "SKIP LOCKED, once: \(context): \(plan)")
            }
        }
        // And it claims what the ranking says: the oldest job of an instance without runs (i3's), before the older
        // jobs of i1 and i2; the one job of the only absent instance; the oldest of the instance with the fewest runs.
        let claimed = try connection.query("EXECUTE claim(30000, 'w', 60000, ARRAY['i1', 'i2'], ARRAY[8, 1], 0)")
        XCTAssertEqual(claimed.map { claimed.text($0, 1) }, ["i3"])
        let absent = try connection.query(
            "EXECUTE claim(30000, 'w', 60000, ARRAY['i0', 'i1', 'i2', 'i3', 'i4'], ARRAY[1, 1, 1, 1, 1], 1)")
        XCTAssertEqual(absent.map { absent.text($0, 1) }, ["i5"])
        let ranked = try connection.query(
            "EXECUTE claim(30000, 'w', 60000, ARRAY['i0', 'i1', 'i2', 'i3', 'i4', 'i5'], ARRAY[3, 2, 3, 3, 3, 3], 0)")
        XCTAssertEqual(ranked.map { ranked.text($0, 1) }, ["i1"])
    }

    /// A node that runs nothing claims the oldest claimable job: one read of `publish_jobs_open` in id order, no sort.
    func testOldestFirstClaimReadsTheOpenJobsIndexInOrder() async throws {
        let connection = try await claimDatabase()
        defer { connection.close() }
        try connection.execute("PREPARE claim(bigint, text, bigint) AS \(PostgreSQLPushStore.claimOldestSQL)")
        for mode in ["force_custom_plan", "force_generic_plan"] {
            let plan = try executedPlan("EXECUTE claim(30000, 'w', 60000)", mode: mode, on: connection)
            let nodes = Self.nodes(of: plan)
            let reads = nodes.filter { $0["Relation Name"] as? String == "publish_jobs" }
            XCTAssertEqual(
                Set(reads.compactMap { $0["Index Name"] as? String }), ["publish_jobs_open", "publish_jobs_pkey"],
                "\(mode): \(plan)")
            XCTAssertFalse(nodes.contains { $0["Node Type"] as? String == "Sort" }, "\(mode): \(plan)")
            XCTAssertTrue(nodes.contains { $0["Node Type"] as? String == "LockRows" }, "SKIP LOCKED: \(mode)")
        }
        let claimed = try connection.query("EXECUTE claim(30000, 'w', 60000)")
        XCTAssertEqual(claimed.map { claimed.text($0, 2) }, ["p100001"])
    }

    /// Another node's claim holding an instance's oldest job (its row locked until it commits) makes this claim
    /// take the same instance's next job, at once, instead of waiting or finding nothing: `SKIP LOCKED` in the
    /// seek that locks, after the candidates were read without locks.
    func testRankedClaimSkipsAJobAnotherClaimHoldsLocked() async throws {
        let connection = try await claimDatabase()
        defer { connection.close() }
        let other = try PGConnection(connectionString: connectionString)
        defer { other.close() }
        try other.execute("SET lock_timeout = '5s'")
        try connection.execute("SET lock_timeout = '5s'")
        try connection.execute(
            """
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at)
                VALUES ('i5', 'i5-second', 'interests', ARRAY['news'], '\\x00'::bytea, 0)
            """)
        try other.execute("BEGIN")
        _ = try other.query("SELECT id FROM publish_jobs WHERE publish_id = 'i5-first' FOR UPDATE")
        let claimed = try connection.query(
            PostgreSQLPushStore.claimSQL,
            [
                .integer(30000), .text("w"), .integer(60000), .textArray(["i0", "i1", "i2", "i3", "i4"]),
                .integerArray([1, 1, 1, 1, 1]), .integer(1),
            ])
        XCTAssertEqual(claimed.map { claimed.text($0, 2) }, ["i5-second"])
        try other.execute("ROLLBACK")
    }

    /// A database at the newest step holding 100,000 finished jobs of five instances (`i0`...`i4`), 2,000 queued
    /// ones of the same five after them, and one newest queued job of a sixth (`i5`), statistics gathered: open jobs
    /// a small share of the table, where the statistics of `state` misled the planner (`claimable`).
    private func claimDatabase() async throws -> PGConnection {
        let store = try await openNode(poolSize: 1)
        try await store.close()
        let connection = try PGConnection(connectionString: connectionString)
        try connection.execute(
            """
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at, state, finished_at)
            SELECT 'i' || (g % 5), 'p' || g, 'interests', ARRAY['news'], '\\x00'::bytea, g,
                CASE WHEN g > 100000 THEN 'queued' ELSE 'finished' END, CASE WHEN g > 100000 THEN NULL ELSE g END
            FROM generate_series(1, 102000) g;
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at)
                VALUES ('i5', 'i5-first', 'interests', ARRAY['news'], '\\x00'::bytea, 102001);
            ANALYZE
            """)
        return connection
    }

    /// The plan `statement` ran with, in `mode` (`plan_cache_mode`), as EXPLAIN (ANALYZE, FORMAT JSON) gives it;
    /// the statement's writes are rolled back.
    private func executedPlan(_ statement: String, mode: String, on connection: PGConnection) throws -> [String: Any] {
        try connection.execute("SET plan_cache_mode = \(mode)")
        try connection.execute("BEGIN")
        defer { try? connection.execute("ROLLBACK") }
        let result = try connection.query("EXPLAIN (ANALYZE, FORMAT JSON) \(statement)")
        let json = try JSONSerialization.jsonObject(with: Data(result.text(0, 0).utf8))
        return try XCTUnwrap((json as? [[String: Any]])?.first?["Plan"] as? [String: Any])
    }

    /// Every node of a plan, depth first.
    private static func nodes(of plan: [String: Any]) -> [[String: Any]] {
        [plan] + ((plan["Plans"] as? [[String: Any]]) ?? []).flatMap { nodes(of: $0) }
    }
}
