import Foundation
import PushStore
import Testing

final class WebhookQueueContract: StoreContract {
    let lease = Duration.seconds(10)

    @Test(arguments: ContractBackend.selected)
    func testDueWebhookIsClaimedThenHiddenUntilItsLeaseEnds(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let request = WebhookRequest(
            url: "http://127.0.0.1:9/hook", body: Data(#"{"a":1}"#.utf8), headers: ["X-A": "1"])
        let id = try await store.enqueueWebhook(request, now: clock.now)
        let due = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: lease)
        #expect(due == [PendingWebhook(id: id, request: request, attempts: 0, createdAt: clock.now)])
        let hidden = try await store.dueWebhooks(now: clock.now.addingTimeInterval(5), limit: 10, leaseDuration: lease)
        #expect(hidden == [])
        let again = try await store.dueWebhooks(now: clock.now.addingTimeInterval(10), limit: 10, leaseDuration: lease)
        #expect(again.map(\.id) == [id], "a crash mid-attempt retries after the lease")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRetryDeliveredAndGaveUpOutcomes(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let a = try await store.enqueueWebhook(WebhookRequest(url: "http://a", body: Data()), now: clock.now)
        let b = try await store.enqueueWebhook(WebhookRequest(url: "http://b", body: Data()), now: clock.now)
        let c = try await store.enqueueWebhook(WebhookRequest(url: "http://c", body: Data()), now: clock.now)
        let firstTwo = try await store.dueWebhooks(now: clock.now, limit: 2, leaseDuration: lease)
        #expect(firstTwo.map(\.id) == [a, b])
        try await store.markWebhook(
            a, outcome: .retry(at: clock.now.addingTimeInterval(30), error: "HTTP 500"), now: clock.now)
        try await store.markWebhook(b, outcome: .delivered, now: clock.now)
        let third = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: lease)
        #expect(third.map(\.id) == [c])
        try await store.markWebhook(c, outcome: .gaveUp(error: "timeout"), now: clock.now)
        let later = try await store.dueWebhooks(now: clock.now.addingTimeInterval(30), limit: 10, leaseDuration: lease)
        #expect(later.map(\.id) == [a])
        #expect(later.first?.attempts == 1)
        let delivered = b
        await #expect(throws: PushStoreError.notFound) {
            try await store.markWebhook(delivered, outcome: .delivered, now: self.clock.now)
        }
        await #expect(throws: PushStoreError.notFound) {
            try await store.markWebhook(9999, outcome: .delivered, now: self.clock.now)
        }
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testADeferredWebhookIsDueAgainLaterWithoutSpendingAnAttempt(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let id = try await store.enqueueWebhook(WebhookRequest(url: "http://a", body: Data()), now: clock.now)
        let claimed = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: lease)
        #expect(claimed.map(\.id) == [id])
        try await store.markWebhook(id, outcome: .deferred(until: clock.now.addingTimeInterval(5)), now: clock.now)
        let next = try await store.nextWebhookDue()
        #expect(next == clock.now.addingTimeInterval(5), "due at the deferral, not the lease's end")
        let early = try await store.dueWebhooks(now: clock.now.addingTimeInterval(4), limit: 10, leaseDuration: lease)
        #expect(early == [])
        let again = try await store.dueWebhooks(now: clock.now.addingTimeInterval(5), limit: 10, leaseDuration: lease)
        #expect(again.map(\.id) == [id])
        #expect(again.first?.attempts == 0, "no attempt spent")
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testNextDueIsTheEarliestPendingRetryOrLeaseEndAndNilWhenNothingIsPending(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        let none = try await store.nextWebhookDue()
        #expect(none == nil)

        let a = try await store.enqueueWebhook(WebhookRequest(url: "http://a", body: Data()), now: clock.now)
        let queued = try await store.nextWebhookDue()
        #expect(queued == clock.now, "a queued webhook is due at once")

        let claimed = try await store.dueWebhooks(now: clock.now, limit: 10, leaseDuration: .seconds(60))
        #expect(claimed.map(\.id) == [a])
        let leased = try await store.nextWebhookDue()
        #expect(leased == clock.now.addingTimeInterval(60), "a claimed webhook is due again when its lease ends")

        try await store.markWebhook(
            a, outcome: .retry(at: clock.now.addingTimeInterval(10), error: "HTTP 500"), now: clock.now)
        let retry = try await store.nextWebhookDue()
        #expect(retry == clock.now.addingTimeInterval(10))

        let b = try await store.enqueueWebhook(
            WebhookRequest(url: "http://b", body: Data()), now: clock.now.addingTimeInterval(5))
        let earliest = try await store.nextWebhookDue()
        #expect(earliest == clock.now.addingTimeInterval(5))

        try await store.markWebhook(b, outcome: .delivered, now: clock.now)
        try await store.markWebhook(a, outcome: .gaveUp(error: "timeout"), now: clock.now)
        let finished = try await store.nextWebhookDue()
        #expect(finished == nil, "delivered and given-up webhooks are not due")
        try await store.close()
    }
}
