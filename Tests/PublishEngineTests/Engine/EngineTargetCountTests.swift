import BeamsModel
import Foundation
import PublishEngine
import PushStore
import XCTest

/// When a run counts its targets for its completion estimate (`RunProgress.countsAtFirstTarget`): an unpaced one
/// once its first page with targets was read, before any of them is sent, and not at all when it has none; a paced
/// one before it reads a page, since its first estimate rests on the count.
final class EngineTargetCountTests: XCTestCase {
    private func plan(_ delivery: DeliveryOptions?) throws -> Data {
        let body = #"{"interests":["news"],"apns":{"aps":{"alert":"hi"}}}"#
        let request = try PublishRequest.parse(Array(body.utf8), kind: .interests)
        return try PublishPlan(
            request: request, body: Array(body.utf8), instanceID: "inst", publishID: "pub", delivery: delivery
        ).encoded()
    }

    private static let counted = ScriptedStore.Event.subscribersCounted(interest: "news")

    private static func firstCheckpoint(_ events: [ScriptedStore.Event]) -> Int? {
        events.firstIndex { event in
            if case .checkpointed = event { return true }
            return false
        }
    }

    func testAPublishWithNoTargetsFinishesWithoutCountingThem() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...2, interest: "other")
        try await fixture.enqueue("empty")
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender()
        await fixture.runToFinish(store, sender: sender)

        let status = try await fixture.status("empty")
        XCTAssertEqual(status?.state, .finished)
        XCTAssertEqual(sender.sent, [])
        XCTAssertTrue(store.events.contains(.pageRead(after: 0)), "its one page was read")
        XCTAssertFalse(store.events.contains(Self.counted), "nothing to estimate: no count")
    }

    func testAnUnpacedPublishCountsOnceAfterItsFirstPageBeforeSending() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...3)
        try await fixture.enqueue("some")
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender()
        await fixture.runToFinish(store, sender: sender)

        XCTAssertEqual(sender.sent.count, 3)
        let events = store.events
        XCTAssertEqual(events.filter { $0 == Self.counted }.count, 1)
        let read = try XCTUnwrap(events.firstIndex(of: .pageRead(after: 0)))
        let counted = try XCTUnwrap(events.firstIndex(of: Self.counted))
        let checkpointed = try XCTUnwrap(Self.firstCheckpoint(events))
        XCTAssertLessThan(read, counted, "counted once the first page showed targets")
        XCTAssertLessThan(counted, checkpointed, "counted before the first answer was written")
    }

    func testAPacedPublishCountsBeforeItReadsAPage() async throws {
        let fixture = EngineFixture()
        try await fixture.addDevices(1...2)
        var delivery = DeliveryOptions()
        delivery.throttlePerMinute = 60_000
        _ = try await fixture.base.enqueuePublish(
            PublishJob(
                instanceID: fixture.instanceID, publishID: "paced", kind: .interests, targets: ["news"],
                payload: try plan(delivery), createdAt: Date()))
        let store = ScriptedStore(fixture.base)
        let sender = FakeSender()
        await fixture.runToFinish(store, sender: sender)

        XCTAssertEqual(sender.sent.count, 2)
        let events = store.events
        XCTAssertEqual(events.filter { $0 == Self.counted }.count, 1)
        let counted = try XCTUnwrap(events.firstIndex(of: Self.counted))
        let read = try XCTUnwrap(events.firstIndex(of: .pageRead(after: 0)))
        XCTAssertLessThan(counted, read, "its first estimate rests on the pacing and the count")
    }
}
