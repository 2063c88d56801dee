import Foundation
import XCTest

@testable import PushStore

/// `nextWebhookDue`: what the webhook outbox sleeps until.
final class WebhookNextDueTests: StoreTestCase {
    func testNextDueIsTheEarliestPendingRetryOrLeaseEndAndNilWhenNothingIsPending() async throws {
        let store = try await openStore()
        let none = try await store.nextWebhookDue()
        XCTAssertNil(none)

        let a = try await store.enqueueWebhook(WebhookRequest(url: "http://a", body: Data()), now: clock.now)
        let queued = try await store.nextWebhookDue()
        XCTAssertEqual(queued, clock.now, "a queued webhook is due at once")

        let claimed = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        XCTAssertEqual(claimed.map(\.id), [a])
        let leased = try await store.nextWebhookDue()
        XCTAssertEqual(leased, clock.now.addingTimeInterval(60), "a claimed webhook is due again when its lease ends")

        try await store.markWebhook(a, outcome: .retry(at: clock.now.addingTimeInterval(10), error: "HTTP 500"), now: clock.now)
        let retry = try await store.nextWebhookDue()
        XCTAssertEqual(retry, clock.now.addingTimeInterval(10))

        let b = try await store.enqueueWebhook(WebhookRequest(url: "http://b", body: Data()), now: clock.now.addingTimeInterval(5))
        let earliest = try await store.nextWebhookDue()
        XCTAssertEqual(earliest, clock.now.addingTimeInterval(5))

        try await store.markWebhook(b, outcome: .delivered, now: clock.now)
        try await store.markWebhook(a, outcome: .gaveUp(error: "timeout"), now: clock.now)
        let finished = try await store.nextWebhookDue()
        XCTAssertNil(finished, "delivered and given-up webhooks are not due")
        try await store.close()
    }
}
