import Foundation
import HTTPClient
import HTTPServer
import JSON
import Locking
import Logging
import Observability
import PushStore
import SQLiteStore
import TestSupport
import XCTest

@testable import PublishEngine

/// The webhook outbox as a service, over real sockets to a local receiver: it wakes when a webhook is queued (it
/// never polls: with nothing due it waits for a wake-up or the next due time), and cancellation aborts the attempt
/// in flight without marking it, so it is retried once its lease ends.
final class WebhookOutboxServiceTests: XCTestCase {
    private var directory: URL!
    private var receiver: HTTPServer?

    override func setUp() {
        super.setUp()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("outbox-\(UUID().uuidString)")
    }

    override func tearDown() async throws {
        await receiver?.shutdown()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A receiver on 127.0.0.1 that hands each body to `onBody` and answers 200 once it returns. - Returns: its URL.
    private func startReceiver(_ onBody: @escaping @Sendable (String) async -> Void) throws -> String {
        var router = Router()
        router.post("/hook") { request in
            await onBody(String(decoding: request.body, as: UTF8.self))
            return HTTPResponse(status: .ok)
        }
        var configuration = HTTPServerConfiguration(host: "127.0.0.1", port: 0, eventLoopCount: 1)
        configuration.limits.shutdownGracePeriod = .seconds(1)
        let server = HTTPServer(configuration: configuration, router: router)
        receiver = server
        return "http://127.0.0.1:\(try server.start())/hook"
    }

    private func outbox(_ store: SQLitePushStore) throws -> WebhookOutbox {
        let client = try HTTPExchangeClient(
            configuration: .webhooks(
                policy: DestinationPolicy(allowances: [try DestinationPolicy.Allowance(parsing: "127.0.0.1")])))
        return WebhookOutbox(store: store, client: client, metrics: Metrics(), logger: .disabled)
    }

    private func openStore() async throws -> SQLitePushStore {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return try await SQLitePushStore.open(.init(path: directory.appendingPathComponent("p.sqlite").path))
    }

    func testDeliversWhatAnEarlierRunQueuedThenWakesForAWebhookQueuedWhileIdle() async throws {
        let store = try await openStore()
        let bodies = Locked<[String]>([])
        let first = expectation(description: "the webhook queued before the run")
        let second = expectation(description: "the webhook queued while idle")
        let url = try startReceiver { body in
            let count = bodies.withLock {
                $0.append(body); return $0.count
            }
            (count == 1 ? first : second).fulfill()
        }
        // As a previous process left it: queued, not delivered.
        _ = try await store.enqueueWebhook(
            WebhookRequest(url: url, body: Data(#"{"queued":"earlier"}"#.utf8)), now: Date())
        let outbox = try outbox(store)
        let running = Task { await outbox.run() }

        await fulfillment(of: [first], timeout: 10)
        // Nothing is due now and nothing will be: only the wake-up from queuing can get the next one out.
        await outbox.publishStarted(url: url, instanceID: "i", publishID: "p-1", requestBody: .object([:]))
        await fulfillment(of: [second], timeout: 10)
        // The receiver saw the body before the outbox read the answer and recorded it; cancelling now would abort
        // that attempt (by design). The store is the only observer of "recorded", so wait for it, bounded.
        try await eventually("the outbox recorded the answer") { try await store.nextWebhookDue() == nil }

        running.cancel()
        await running.value
        XCTAssertEqual(bodies.withLock { $0.count }, 2)
        XCTAssertTrue(bodies.withLock { $0[1] }.contains(#""status":"STARTED""#), "\(bodies.withLock { $0 })")
        let pending = try await store.nextWebhookDue()
        XCTAssertNil(pending, "both were recorded as delivered")
        try await store.close()
    }

    func testCancellationAbortsTheAttemptInFlightAndLeavesItForItsLease() async throws {
        let store = try await openStore()
        let arrived = expectation(description: "the attempt reached the receiver")
        let (held, release) = AsyncStream.makeStream(of: Void.self)
        let url = try startReceiver { _ in
            arrived.fulfill()
            for await _ in held {}  // answers only once the test is over
        }
        let outbox = try outbox(store)
        let running = Task { await outbox.run() }
        let queued = Date()
        await outbox.publishStarted(url: url, instanceID: "i", publishID: "p-2", requestBody: .object([:]))
        await fulfillment(of: [arrived], timeout: 10)

        running.cancel()
        await running.value  // returns although the receiver never answered
        release.finish()

        let next = try await store.nextWebhookDue()
        let due = try XCTUnwrap(next, "still pending, not marked")
        XCTAssertGreaterThanOrEqual(due.timeIntervalSince(queued), 59, "retried when the claim's lease ends")
        try await store.close()
    }
}

/// How a stored webhook becomes an `HTTPExchange` (the one outbound HTTP stack).
final class WebhookExchangeBuildingTests: XCTestCase {
    func testStoredHeadersAreSentInNameOrder() throws {
        let exchange = try WebhookOutbox.exchange(
            url: "https://hooks.example.com/b?x=1",
            headers: ["X-B": "2", "Content-Type": "application/json", "A": "1"],
            body: Array("{}".utf8))
        XCTAssertEqual(exchange.url.text, "https://hooks.example.com/b?x=1")
        XCTAssertEqual(exchange.headers, ["A: 1", "Content-Type: application/json", "X-B: 2"])
        XCTAssertEqual(exchange.method, .post)
        XCTAssertEqual(exchange.body, Array("{}".utf8))
    }

    func testAStoredURLThatDoesNotParseFailsAsInvalidURLWithoutSending() {
        for url in ["ftp://127.0.0.1/x", "file:///etc/passwd", "http://exa mple/", "not a url"] {
            XCTAssertThrowsError(try WebhookOutbox.exchange(url: url, headers: [:], body: [UInt8]())) { error in
                XCTAssertEqual((error as? HTTPExchangeError)?.kind, .invalidURL, url)
            }
        }
    }
}
