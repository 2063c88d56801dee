import Foundation
import PostgreSQLStore
import PushStore
import XCTest

/// Several stores ("nodes") on one database: the conflicts the database settles.
final class MultiNodeTests: PostgreSQLTestCase {
    func testConcurrentRegistrationsOfOneTokenOnTwoNodesMakeOneDevice() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        let registrations = (0..<20).map { DeviceRegistration(instanceID: instance, token: token($0)) }
        // Every token is registered four times at once: twice through each node.
        let results = try await withThrowingTaskGroup(of: RegisteredDevice.self) { group in
            for registration in registrations {
                for node in [nodeA, nodeB, nodeA, nodeB] {
                    group.addTask { try await node.registerDevice(registration, maxDevicesPerInstance: 1000) }
                }
            }
            return try await group.reduce(into: [RegisteredDevice]()) { $0.append($1) }
        }
        let byToken = Dictionary(grouping: results, by: \.device.token)
        XCTAssertEqual(byToken.count, 20)
        for (token, answers) in byToken {
            XCTAssertEqual(Set(answers.map(\.device.id)).count, 1, "one device for \(token)")
            XCTAssertEqual(answers.filter(\.created).count, 1, "exactly one registration created \(token)")
        }
        XCTAssertEqual(try scalar("SELECT count(*) FROM devices"), "20")
        XCTAssertEqual(try scalar("SELECT devices FROM instance_device_counts"), "20", "the cap's count stays exact")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testConcurrentNewDevicesOnTwoNodesNeverPassTheInstanceCap() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for n in 0..<40 {
                let node = n % 2 == 0 ? nodeA : nodeB
                let registration = DeviceRegistration(instanceID: instance, token: token(n))
                group.addTask { (try? await node.registerDevice(registration, maxDevicesPerInstance: 25)) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.filter { $0 }.count, 25)
        XCTAssertEqual(try scalar("SELECT count(*) FROM devices"), "25")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testConcurrentInterestWritesOnTwoNodesNeverPassTheInstanceCaps() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        var ids: [String] = []
        for n in 0..<40 {
            ids.append(
                try await nodeA.registerDevice(DeviceRegistration(instanceID: instance, token: token(n))).device.id)
        }
        // 40 devices each ask for 3 names of their own (120 subscriptions, 120 names) against caps of 60 and 45.
        let limits = InterestLimits(maxSubscriptionsPerInstance: 60, maxInterestsPerInstance: 45)
        let instance = self.instance
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for (n, id) in ids.enumerated() {
                let node = n % 2 == 0 ? nodeA : nodeB
                group.addTask {
                    (try? await node.setInterests(
                        instanceID: instance, deviceID: id,
                        interests: ["n\(n)-a", "n\(n)-b", "n\(n)-c"], limits: limits)) != nil
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        XCTAssertEqual(outcomes.filter { $0 }.count, 15, "45 names / 3 per device")
        XCTAssertEqual(try scalar("SELECT count(*) FROM interests"), "45")
        XCTAssertEqual(
            try scalar("SELECT interests || ',' || subscriptions FROM instance_device_counts"), "45,45",
            "the caps' counts stay exact")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testSkipLockedClaimsByTwoNodesNeverOverlap() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        var enqueued: Set<PublishJobID> = []
        for n in 0..<60 {
            enqueued.insert(
                try await nodeA.enqueuePublish(
                    PublishJob(
                        instanceID: instance, publishID: "p\(n)", kind: .interests, targets: ["news"],
                        payload: Data([UInt8(n)]), createdAt: now)))
        }
        let now = self.now
        // Eight claimers per node, each claiming until the queue is empty.
        let claims = try await withThrowingTaskGroup(of: [PublishJobID].self) { group in
            for worker in 0..<16 {
                let node = worker % 2 == 0 ? nodeA : nodeB
                group.addTask {
                    var mine: [PublishJobID] = []
                    while let claimed = try await node.claimJob(
                        workerID: "w\(worker)", leaseDuration: .seconds(60), now: now)
                    {
                        mine.append(claimed.id)
                    }
                    return mine
                }
            }
            return try await group.reduce(into: [[PublishJobID]]()) { $0.append($1) }
        }
        let all = claims.flatMap { $0 }
        XCTAssertEqual(all.count, 60, "every job claimed exactly once")
        XCTAssertEqual(Set(all), enqueued)
        XCTAssertGreaterThan(claims.filter { !$0.isEmpty }.count, 1, "claims were spread over several workers")
        XCTAssertEqual(try scalar("SELECT count(*) FROM publish_jobs WHERE attempts <> 1"), "0")
        try await nodeA.close()
        try await nodeB.close()
    }

    func testLeaseTakeoverByAnotherNodeFencesTheFormerHolder() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        let id = try await nodeA.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "p", kind: .interests, targets: ["news"], payload: Data(),
                createdAt: now))
        let first = try await nodeA.claimJob(workerID: "node-a", leaseDuration: .seconds(5), now: now)
        XCTAssertEqual(first?.id, id)
        try await nodeA.checkpoint(
            id, workerID: "node-a", cursor: 40, counters: [.accepted(.apns): 40], deviceResults: [])
        let early = try await nodeB.claimJob(
            workerID: "node-b", leaseDuration: .seconds(5), now: now.addingTimeInterval(4))
        XCTAssertNil(early, "a live lease is skipped")
        // Node A stops renewing (killed, partitioned): after the lease node B takes over at A's checkpoint.
        let takeover = try await nodeB.claimJob(
            workerID: "node-b", leaseDuration: .seconds(5), now: now.addingTimeInterval(5))
        XCTAssertEqual(takeover?.id, id)
        XCTAssertEqual(takeover?.attempt, 2)
        XCTAssertEqual(takeover?.cursor, 40)
        XCTAssertEqual(takeover?.counters, [.accepted(.apns): 40])
        // Node A comes back: every write it tries is refused, so it stops sending.
        await assertLeaseLost(id) {
            try await nodeA.checkpoint(
                id, workerID: "node-a", cursor: 90, counters: [.accepted(.apns): 50], deviceResults: [])
        }
        await assertLeaseLost(id) {
            try await nodeA.renewLease(
                id, workerID: "node-a", leaseDuration: .seconds(5), now: self.now.addingTimeInterval(6))
        }
        await assertLeaseLost(id) {
            try await nodeA.finishJob(
                id, workerID: "node-a", state: .finished, targetsTotal: 90, summary: nil,
                now: self.now.addingTimeInterval(6))
        }
        try await nodeB.checkpoint(
            id, workerID: "node-b", cursor: 100, counters: [.accepted(.apns): 60], deviceResults: [])
        try await nodeB.finishJob(
            id, workerID: "node-b", state: .finished, targetsTotal: 100, summary: nil,
            now: now.addingTimeInterval(7))
        let status = try await nodeA.publishStatus(instanceID: instance, publishID: "p")
        XCTAssertEqual(status?.counters, [.accepted(.apns): 100], "the fenced writes changed nothing")
        XCTAssertEqual(status?.state, .finished)
        try await nodeA.close()
        try await nodeB.close()
    }

    func testWebhookClaimedByOneNodeOnly() async throws {
        let nodeA = try await openNode()
        let nodeB = try await openNode()
        for n in 0..<30 {
            _ = try await nodeA.enqueueWebhook(WebhookRequest(url: "http://127.0.0.1:9/\(n)", body: Data()), now: now)
        }
        let now = self.now
        let batches = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for worker in 0..<6 {
                let node = worker % 2 == 0 ? nodeA : nodeB
                group.addTask { try await node.dueWebhooks(now: now, limit: 7, leaseDuration: .seconds(30)).map(\.id) }
            }
            return try await group.reduce(into: [Int64]()) { $0 += $1 }
        }
        XCTAssertEqual(batches.count, 30)
        XCTAssertEqual(Set(batches).count, 30, "no webhook handed to two claimers")
        try await nodeA.close()
        try await nodeB.close()
    }
}
