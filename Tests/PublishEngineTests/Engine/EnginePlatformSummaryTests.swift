import BeamsModel
import Foundation
import PushStore
import XCTest

@testable import PublishEngine

/// A platform without credentials is named in a publish's summary only when the publish had devices on it.
final class EnginePlatformSummaryTests: XCTestCase {
    func testPublishWithoutAndroidOrWebDevicesHasNoNoteForThoseUnconfiguredPlatforms() async throws {
        let fixture = EngineFixture()  // no FCM or Web Push sender: both platforms are not configured
        let apns = try await fixture.addDevices(1...3)
        try await fixture.enqueue("ios-only", payload: try EngineFixture.mixedPlan())  // carries fcm and web sections
        let sender = FakeSender()
        let store = ScriptedStore(fixture.base)
        let engine = RunningEngine(fixture.makeEngine(store: store, sender: sender))
        await store.waitFor("ios-only finished") { $0.finishedCount == 1 }
        await engine.stop()

        XCTAssertEqual(sender.sentTokens, apns)
        let loaded = try await fixture.status("ios-only")
        let status = try XCTUnwrap(loaded)
        XCTAssertEqual(status.state, .finished)
        XCTAssertEqual(status.accepted(on: .apns), 3)
        XCTAssertEqual(status.failedByReason(on: .fcm), [:])
        XCTAssertEqual(status.failedByReason(on: .web), [:])
        XCTAssertNil(status.summary, "no Android or web devices: nothing to say about FCM or Web Push")
    }

    func testNotesFollowTheNotConfiguredCountersOnly() {
        XCTAssertNil(PublishSummary.notes(counters: [:]))
        XCTAssertNil(
            PublishSummary.notes(counters: [
                .accepted(.fcm): 4,
                .failed(.fcm, reason: "UNREGISTERED"): 1,
            ]))
        XCTAssertEqual(
            PublishSummary.notes(counters: [.failed(.web, reason: "NoWebPushCredentials"): 2]),
            "no Web Push (VAPID) key configured: nothing was sent to browsers")
        XCTAssertEqual(
            PublishSummary.notes(counters: [
                .failed(.apns, reason: "NoAPNsCredentials"): 1,
                .failed(.fcm, reason: "NoFCMCredentials"): 1,
            ]),
            "no APNs credentials configured: nothing was sent; "
                + "no FCM credentials configured: nothing was sent to Android devices")
        XCTAssertNil(PublishSummary.notes(counters: [.failed(.fcm, reason: "NoFCMCredentials"): 0]))
        XCTAssertEqual(
            PublishSummary.notes(counters: [.failed(.unifiedpush, reason: "NoUnifiedPushConfig"): 1]),
            "no unifiedpush section configured: nothing was sent to UnifiedPush devices")
    }
}
