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
        // `device_interests_by_device` filtering on the interest, would show in the plan.
        try connection.execute("""
            INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
            SELECT 'apns-' || g, 'i', 'apns', lpad(to_hex(g), 64, '0'), 'production', 0, 0 FROM generate_series(1, 20000) g;
            INSERT INTO interests (instance_id, name) SELECT 'i', 'other' || g FROM generate_series(0, 9) g;
            INSERT INTO interests (instance_id, name) VALUES ('i', 'news'), ('i', 'sparse');
            INSERT INTO device_interests (interest_id, device_id)
                SELECT i.id, d.id FROM devices d JOIN interests i ON i.name = 'news'
                    OR (i.name = 'sparse' AND d.id % 10 = 0) OR i.name = 'other' || (d.id % 10);
            ANALYZE
            """)
        for (interest, cursor) in [("news", 10_000), ("sparse", 10_000), ("sparse", 0)] {
            let sql = "EXPLAIN " + PostgreSQLPushStore.interestPageSQL
                .replacingOccurrences(of: "$1::bigint[]", with: "ARRAY(SELECT id FROM interests WHERE name = '\(interest)')")
                .replacingOccurrences(of: "$2", with: String(cursor)).replacingOccurrences(of: "$3", with: "1001")
            for mode in ["force_custom_plan", "force_generic_plan"] {
                try connection.execute("SET plan_cache_mode = \(mode)")
                let plan = try connection.query(sql)
                let text = plan.map { plan.text($0, 0) }.joined(separator: "\n")
                let context = "\(interest) after \(cursor), \(mode):\n\(text)"
                XCTAssertFalse(text.contains("Seq Scan on devices"), context)
                XCTAssertFalse(text.contains("Seq Scan on device_interests"), context)
                XCTAssertTrue(text.contains("Index Cond: ((id > \(cursor)) AND (id <= "), "devices bounded on both sides: \(context)")
                if interest == "sparse" { XCTAssertTrue(text.contains("device_interests_pkey"), context) }
            }
        }
    }
}
