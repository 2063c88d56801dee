import Foundation
import PostgreSQLStore
import PushStore
import TestSupport
import XCTest

/// Writes of two nodes over the same device rows at once (issue #24): answers arrive in any order, so two
/// checkpoints name the same devices in different orders; the store must lock them in one order, never deadlock.
final class LockOrderTests: PostgreSQLTestCase {
    /// A node that gives up at the first deadlock instead of replaying it, so a deadlock fails the call.
    private func openNodeFailingOnDeadlock() async throws -> PostgreSQLPushStore {
        var configuration = PostgreSQLPushStore.Configuration(connectionString: connectionString)
        configuration.maxAttempts = 1
        let now = self.now
        configuration.clock = { now }
        return try await PostgreSQLPushStore.open(configuration)
    }

    func testConcurrentCheckpointsOfTwoNodesOverTheSameDevicesInShuffledOrdersNeverDeadlock() async throws {
        let nodeA = try await openNodeFailingOnDeadlock()
        let nodeB = try await openNodeFailingOnDeadlock()
        for n in 0..<120 {
            _ = try await nodeA.registerDevice(
                DeviceRegistration(instanceID: instance, token: token(n)),
                maxDevicesPerInstance: 1000)
        }
        let devices = try scalar("SELECT string_agg(id::text, ',') FROM devices").split(separator: ",")
            .compactMap { Int64($0) }
        XCTAssertEqual(devices.count, 120)
        // Four running publishes per node, each checkpointed by a task of its own with every device's answer in a
        // shuffled order, as answers arrive.
        var runs: [(PostgreSQLPushStore, String, PublishJobID)] = []
        for (node, worker) in [(nodeA, "node-a"), (nodeB, "node-b")] {
            for n in 0..<4 {
                _ = try await node.enqueuePublish(
                    PublishJob(
                        instanceID: instance, publishID: "\(worker)-\(n)", kind: .interests, targets: ["news"],
                        payload: Data(), createdAt: now))
                let claimed = try await node.claimJob(workerID: worker, leaseDuration: .seconds(600), now: now)
                runs.append((node, worker, try XCTUnwrap(claimed).id))
            }
        }
        let at = now
        let failures = await withTaskGroup(of: [String].self) { group in
            for (index, (node, worker, job)) in runs.enumerated() {
                group.addTask {
                    var random = SplitMix64(seed: UInt64(index + 1))
                    var failures: [String] = []
                    for round in 1...8 {
                        let results = devices.shuffled(using: &random).map {
                            DeviceResult(
                                device: $0, status: round % 3 == 0 ? 400 : 200,
                                reason: round % 3 == 0 ? "BadDeviceToken" : nil, at: at)
                        }
                        do {
                            try await node.checkpoint(
                                job, workerID: worker, cursor: Int64(round), counters: [.targets: 1],
                                deviceResults: results)
                        } catch {
                            failures.append("\(error)")
                        }
                    }
                    return failures
                }
            }
            return await group.reduce(into: [String]()) { $0 += $1 }
        }
        XCTAssertEqual(failures, [], "a checkpoint failed (a deadlock is not replayed by these nodes)")
        XCTAssertEqual(try scalar("SELECT count(*) FROM publish_jobs WHERE cursor = 8"), "8")
        try await nodeA.close()
        try await nodeB.close()
    }

    /// What every app launch sends, on two nodes at once: re-registrations of the same known tokens in shuffled
    /// orders mixed with new devices, capped. A group transaction that locked a known token's row and then waited for
    /// the count row (or another token's row) deadlocked with one that held them the other way round; after its
    /// first write a group waits for no row now (`PGConnection.followsOtherWrites`), it runs the write alone.
    func testReRegistrationsAndNewDevicesOfTwoNodesInShuffledOrdersNeverDeadlock() async throws {
        let nodeA = try await openNodeFailingOnDeadlock()
        let nodeB = try await openNodeFailingOnDeadlock()
        let known = (0..<40).map { token($0) }
        for token in known {
            _ = try await nodeA.registerDevice(
                DeviceRegistration(instanceID: instance, token: token), maxDevicesPerInstance: 1000)
        }
        // Every registration at once (each node groups what it has queued into shared transactions), each token
        // through both nodes twice, in an order of its own per pass.
        let fresh = (0..<80).map { token(1000 + $0) }
        var random = SplitMix64(seed: 7)
        let passes = (0..<4).map { _ in (known + fresh).shuffled(using: &random) }
        let instance = self.instance
        let failures = await withTaskGroup(of: String?.self) { group in
            for (index, pass) in passes.enumerated() {
                let node = index % 2 == 0 ? nodeA : nodeB
                for token in pass {
                    group.addTask {
                        do {
                            _ = try await node.registerDevice(
                                DeviceRegistration(instanceID: instance, token: token), maxDevicesPerInstance: 1000)
                            return nil
                        } catch {
                            return "\(error)"
                        }
                    }
                }
            }
            return await group.reduce(into: [String]()) { if let failure = $1 { $0.append(failure) } }
        }
        XCTAssertEqual(failures, [], "a registration failed (a deadlock is not replayed by these nodes)")
        XCTAssertEqual(try scalar("SELECT count(*) FROM devices"), "120")
        XCTAssertEqual(try scalar("SELECT devices FROM instance_device_counts"), "120", "the cap's count stays exact")
        try await nodeA.close()
        try await nodeB.close()
    }
}
