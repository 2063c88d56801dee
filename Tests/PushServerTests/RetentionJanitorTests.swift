import Foundation
import InMemoryStore
import Locking
import Logging
import PushServer
import PushStore
import SQLiteStore
import XCTest

final class RetentionJanitorTests: XCTestCase {
    func testPurgesEndedPublishesOlderThanTheRetentionAndKeepsNewerOnes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("janitor-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = try await SQLitePushStore.open(.init(path: directory.appendingPathComponent("p.sqlite").path))
        let day: TimeInterval = 86_400
        let old = Date(timeIntervalSince1970: 1_700_000_000)
        for (index, created) in [old, old.addingTimeInterval(20 * day)].enumerated() {
            _ = try await store.enqueuePublish(
                PublishJob(
                    instanceID: "i", publishID: "p\(index)", kind: .interests,
                    targets: ["a"], payload: Data(), createdAt: created))
            let claim = try await store.claimJob(workerID: "w", leaseDuration: .seconds(30), now: created)
            let claimed = try XCTUnwrap(claim)
            try await store.finishJob(
                claimed.id, workerID: "w", state: .finished, targetsTotal: 0, summary: nil, now: created)
        }
        let sink = CapturingLogSink()
        let janitor = RetentionJanitor(store: store, retentionDays: 30, logger: Logger(label: "t", sink: sink))
        let result = await janitor.purgeOnce(now: old.addingTimeInterval(40 * day))
        XCTAssertEqual(result.publishes, 1, "only the publish older than 30 days goes")
        let kept = try await store.publishStatus(instanceID: "i", publishID: "p1")
        XCTAssertNotNil(kept)
        let gone = try await store.publishStatus(instanceID: "i", publishID: "p0")
        XCTAssertNil(gone)
        XCTAssertTrue(sink.lines.contains { $0.contains("Purged old history") && $0.contains("publishes=1") })
        try await store.close()
    }

    func testDeletesExpiredLiveActivityTokensEvenWithoutHistoryRetention() async throws {
        let store = InMemoryPushStore()
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let device = try await store.registerDevice(
            DeviceRegistration(instanceID: "i", token: String(repeating: "ab", count: 32))
        ).device
        for (id, hours) in [("old", 1.0), ("live", 12.0)] {
            _ = try await store.putLiveActivityUpdateToken(
                instanceID: "i", deviceID: device.id, activityID: id, attributesType: "Match", token: "abcd",
                reference: nil, expiresAt: now.addingTimeInterval(hours * 3600), limits: LiveActivityLimits(), now: now)
        }
        let sink = CapturingLogSink()
        let janitor = RetentionJanitor(
            store: store, retentionDays: 0, logger: Logger(label: "t", sink: sink),
            liveActivities: store)
        let purged = await janitor.purgeExpiredLiveActivityTokens(now: now.addingTimeInterval(2 * 3600))
        XCTAssertEqual(purged, 1)
        let left = try await store.liveActivityTokens(instanceID: "i", deviceID: device.id)
        XCTAssertEqual(left?.map(\.activityID), ["live"])
        XCTAssertTrue(
            sink.lines.contains { $0.contains("Purged expired Live Activity tokens") && $0.contains("tokens=1") })
    }

    func testExpiresDevicesNobodyDeliveredToAfterTheConfiguredDaysWithoutRegistration() async throws {
        let day: TimeInterval = 86_400
        let start = Date(timeIntervalSince1970: 1_700_000_000)
        let clock = Locked(start)
        let store = InMemoryPushStore(clock: { clock.withLock { $0 } })
        let junk = try await store.registerDevice(
            DeviceRegistration(instanceID: "i", token: String(repeating: "ab", count: 32)))
        clock.withLock { $0 = start.addingTimeInterval(50 * day) }
        let fresh = try await store.registerDevice(
            DeviceRegistration(instanceID: "i", token: String(repeating: "cd", count: 32)))
        let sink = CapturingLogSink()
        let janitor = RetentionJanitor(
            store: store, retentionDays: 0, undeliveredDeviceDays: 90,
            logger: Logger(label: "t", sink: sink))
        let early = await janitor.purgeOnce(now: start.addingTimeInterval(89 * day))
        XCTAssertEqual(early.undeliveredDevices, 0)
        let due = await janitor.purgeOnce(now: start.addingTimeInterval(91 * day))
        XCTAssertEqual(due.undeliveredDevices, 1)
        let gone = try await store.device(instanceID: "i", id: junk.device.id)
        XCTAssertNil(gone)
        let kept = try await store.device(instanceID: "i", id: fresh.device.id)
        XCTAssertNotNil(kept)
        XCTAssertTrue(
            sink.lines.contains { $0.contains("Expired devices nobody delivered to") && $0.contains("devices=1") })
        let off = RetentionJanitor(store: store, retentionDays: 0, undeliveredDeviceDays: 0, logger: Logger(label: "t"))
        let none = await off.purgeOnce(now: start.addingTimeInterval(1000 * day))
        XCTAssertEqual(none.undeliveredDevices, 0, "0 keeps them")
    }

    func testPurgesInvalidationEventsPastTheirOwnRetentionEvenWithHistoryKeptForever() async throws {
        let store = InMemoryPushStore()
        let day: TimeInterval = 86_400
        // After the registrations' wall-clock time: a result older than the last registration invalidates nothing.
        let start = Date(millisecondsSince1970: Date().addingTimeInterval(60).millisecondsSince1970)
        var refs: [Int64] = []
        for n in 0..<2 {
            let device = try await store.registerDevice(
                DeviceRegistration(
                    instanceID: "i", token: String(repeating: "ab", count: 31) + "0\(n)")
            ).device
            _ = try await store.setUser(instanceID: "i", deviceID: device.id, userID: "u\(n)", maxDevicesPerUser: 10)
            let job = PublishJob(
                instanceID: "i", publishID: "p\(n)", kind: .users, targets: ["u\(n)"], payload: Data(),
                createdAt: start)
            let page = try await store.targets(for: job, after: 0, limit: 10)
            refs.append(try XCTUnwrap(page.targets.first).ref)
        }
        let invalidatedAt = [start.addingTimeInterval(day), start.addingTimeInterval(9 * day)]
        for (ref, at) in zip(refs, invalidatedAt) {
            try await store.recordDeviceResults([DeviceResult(device: ref, status: 400, at: at, effect: .badToken)])
        }
        let sink = CapturingLogSink()
        let janitor = RetentionJanitor(
            store: store, retentionDays: 0, logger: Logger(label: "t", sink: sink),
            invalidations: store, invalidationRetentionDays: 7)
        await janitor.purgeOnce(now: start.addingTimeInterval(10 * day))
        let left = try await store.invalidations(instanceID: "i", after: 0, limit: 10)
        XCTAssertEqual(left.map(\.at), [invalidatedAt[1]], "only the event older than 7 days goes")
        XCTAssertTrue(sink.lines.contains { $0.contains("Purged old invalidation events") && $0.contains("events=1") })
    }

    func testPrunesAuditEntriesPastTheirOwnRetentionEvenWithHistoryKeptForever() async throws {
        let store = InMemoryPushStore()
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for (target, age) in [("old", 91.0), ("recent", 89.0)] {
            try await store.appendAudit(
                AuditEntry(
                    at: now.addingTimeInterval(-age * 86_400), instanceID: "i", actor: "k", source: "127.0.0.1",
                    action: "key.create", target: target, requestID: "r"))
        }
        let janitor = RetentionJanitor(
            store: store, retentionDays: 0, logger: Logger(label: "t"), audit: store,
            auditRetentionDays: 90)
        let pruned = await janitor.purgeAudit(now: now)
        XCTAssertEqual(pruned, 1)
        let left = try await store.auditEntries(instanceID: "i", after: 0, limit: 10)
        XCTAssertEqual(left.map(\.target), ["recent"])
        let keepForever = RetentionJanitor(
            store: store, retentionDays: 0, logger: Logger(label: "t"), audit: store,
            auditRetentionDays: 0)
        let none = await keepForever.purgeAudit(now: now.addingTimeInterval(1000 * 86_400))
        XCTAssertEqual(none, 0)
    }
}
