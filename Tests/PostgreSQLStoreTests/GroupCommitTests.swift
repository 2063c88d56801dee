import Foundation
import PushStore
import XCTest

@testable import PostgreSQLStore

/// Concurrent writes share transactions (one WAL flush for many), and one that fails is undone alone.
final class PostgreSQLGroupCommitTests: PostgreSQLTestCase {
    func testConcurrentWritesShareTransactionsAndAFailureUndoesOnlyItself() async throws {
        let store = try await openNode(poolSize: 1)
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "dup", kind: .interests, targets: ["a"], payload: Data(),
                createdAt: now))
        let now = self.now
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for n in 0..<300 {
                // Every 50th is the duplicate: refused, while the others in its transaction commit.
                let id = n % 50 == 0 ? "dup" : "p\(n)"
                let job = PublishJob(
                    instanceID: instance, publishID: id, kind: .interests, targets: ["a"], payload: Data(),
                    createdAt: now)
                group.addTask { (try? await store.enqueuePublish(job)) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.filter { $0 }.count, 294)
        XCTAssertEqual(try scalar("SELECT count(*) FROM publish_jobs"), "295")
        // Each write asks for its top-level transaction's id (inside its savepoint, txid_current() still names the
        // enclosing transaction).
        let transactionIDs = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<300 {
                group.addTask { try await store.write { try $0.query("SELECT txid_current()").text(0, 0) } }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        XCTAssertLessThan(transactionIDs.count, 100, "300 writes in \(transactionIDs.count) transactions")
        try await store.close()
    }
}
