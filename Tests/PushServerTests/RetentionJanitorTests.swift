import Foundation
import Logging
@testable import PushServer
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
            _ = try await store.enqueuePublish(PublishJob(instanceID: "i", publishID: "p\(index)", kind: .interests,
                                                          targets: ["a"], payload: Data(), createdAt: created))
            let claim = try await store.claimJob(workerID: "w", leaseDuration: .seconds(30), now: created)
            let claimed = try XCTUnwrap(claim)
            try await store.finishJob(claimed.id, workerID: "w", state: .finished, targetsTotal: 0, summary: nil, now: created)
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
}
