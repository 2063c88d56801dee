import Clocks
import Foundation
import HTTPClient
import JSON
import Locking
import TestSupport
import WebPush
import XCTest

/// `WebPushSender` against the strict push-service stand-in (`Tests/Support/mock_push_service.py`) over TLS: it
/// checks VAPID and decrypts every message with the subscription's private key (independent Python code), so an
/// accepted message proves a browser could read it.
final class WebPushSenderTests: XCTestCase {
    private var mock: MockPushService!
    private var keyPair: VAPIDKeyPair!

    override func setUpWithError() throws {
        keyPair = try VAPIDKeyPair.generate().keyPair
        mock = try MockPushService.start(vapidKey: keyPair.publicKeyBase64URL)
    }

    override func tearDown() {
        mock?.stop()
    }

    /// Only the stand-in's host on the allowlist, and only its loopback address allowed by the address policy.
    private func standInConfiguration(
        retry: WebPushRetryPolicy = WebPushRetryPolicy(maxAttempts: 2, initialDelay: 0.01)
    )
        throws -> WebPushSenderConfiguration
    {
        WebPushSenderConfiguration(
            allowedHosts: try WebPushHostAllowlist(parsing: [String(mock.origin.dropFirst("https://".count))]),
            policy: DestinationPolicy(allowances: [try .init(parsing: "127.0.0.1/32")]),
            caFile: mock.caFile, connections: 1, connectionsPerHost: 4, window: 16, requestTimeout: 10,
            connectTimeout: 5,
            retryPolicy: retry)
    }

    private func makeSender(_ configuration: WebPushSenderConfiguration, key: VAPIDKeyPair? = nil) throws
        -> WebPushSender
    {
        let vapid = VAPIDAuthorizer(keyPair: key ?? keyPair, subject: try VAPIDSubject("mailto:ops@example.com"))
        return try WebPushSender(vapid: vapid, configuration: configuration)
    }

    private func notification(
        _ subscription: MockPushService.Subscription, payload: String = #"{"notification":{"title":"Hi"}}"#
    )
        throws -> WebPushNotification
    {
        WebPushNotification(
            subscription: try WebPushSubscription(
                endpoint: subscription.endpoint, p256dh: subscription.p256dh, auth: subscription.auth),
            message: try WebPushMessage(payload: Array(payload.utf8), ttl: 3600, urgency: .high, topic: "news"))
    }

    func testMessageIsAcceptedAndTheStandInDecryptsThePlaintextWithValidVAPID() async throws {
        let sender = try makeSender(try standInConfiguration())
        let subscription = try mock.createSubscription()
        let payload = #"{"notification":{"title":"Hello","body":"from the sender"},"data":{"k":"v"}}"#
        let result = await sender.send(try notification(subscription, payload: payload))
        XCTAssertEqual(result, .response(.accepted(status: 201), attempts: 1))
        let messages = try mock.messages(subscription: subscription.id)
        XCTAssertEqual(messages.count, 1)
        XCTAssertEqual(messages.first?["plaintext"]?.stringValue, payload)
        XCTAssertEqual(messages.first?["ttl"]?.intValue, 3600)
        XCTAssertEqual(messages.first?["urgency"]?.stringValue, "high")
        XCTAssertEqual(messages.first?["topic"]?.stringValue, "news")
        XCTAssertEqual(messages.first?["vapid"]?["claims"]?["aud"]?.stringValue, mock.origin)
        XCTAssertEqual(messages.first?["vapid"]?["k"]?.stringValue, keyPair.publicKeyBase64URL)
        XCTAssertEqual(sender.stats().accepted, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testMessagesEncryptedOnTheSharedWorkersAllReachTheStandInAndDecrypt() async throws {
        var configuration = try standInConfiguration()
        configuration.encryptsOnWorkers = true
        let sender = try makeSender(configuration)
        let subscriptions = try (0..<3).map { _ in try mock.createSubscription() }
        let results = Locked<[WebPushResult]>([])
        for index in 0..<30 {
            let subscription = subscriptions[index % subscriptions.count]
            await sender.submit(try notification(subscription, payload: #"{"n":\#(index)}"#)) { result in
                results.withLock { $0.append(result) }
            }
        }
        try await eventually("every message answered") { results.withLock { $0.count } == 30 }
        XCTAssertEqual(
            results.withLock { $0 }, Array(repeating: .response(.accepted(status: 201), attempts: 1), count: 30))
        for (offset, subscription) in subscriptions.enumerated() {
            let plaintexts = try mock.messages(subscription: subscription.id).compactMap {
                $0["plaintext"]?.stringValue
            }
            XCTAssertEqual(Set(plaintexts), Set(stride(from: offset, to: 30, by: 3).map { #"{"n":\#($0)}"# }))
        }
        XCTAssertEqual(sender.stats().requestsInFlight, 0)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    /// Several instances (one sender and VAPID key each, as the server runs them) publishing at once share the
    /// process's encryption workers: every message must still be encrypted for its own subscription and signed by
    /// its own instance (each subscription pins its instance's key at the stand-in, which decrypts each body).
    func testSeveralInstancesPublishingAtOnceThroughTheSharedWorkersEachReachOnlyTheirSubscriptionsDecrypted()
        async throws
    {
        let instances = 3
        let perInstance = 40
        var senders: [WebPushSender] = []
        var keys: [String] = []
        var batches: [[WebPushNotification]] = []
        var subscriptions: [[MockPushService.Subscription]] = []
        for instance in 0..<instances {
            let key = try VAPIDKeyPair.generate().keyPair
            var configuration = try standInConfiguration()
            configuration.encryptsOnWorkers = true
            senders.append(try makeSender(configuration, key: key))
            keys.append(key.publicKeyBase64URL)
            let own = try (0..<4).map { _ in
                try mock.createSubscription(applicationServerKey: key.publicKeyBase64URL)
            }
            subscriptions.append(own)
            batches.append(
                try (0..<perInstance).map { index in
                    try notification(own[index % own.count], payload: #"{"i":\#(instance),"n":\#(index)}"#)
                })
        }
        let results = Locked<[WebPushResult]>([])
        let all = batches
        let running = senders
        await withTaskGroup(of: Void.self) { group in
            for instance in 0..<instances {
                group.addTask {
                    for message in all[instance] {
                        await running[instance].submit(message) { result in results.withLock { $0.append(result) } }
                    }
                }
            }
        }
        try await eventually("every message answered") { results.withLock { $0.count } == instances * perInstance }
        XCTAssertEqual(
            results.withLock { $0 },
            Array(repeating: .response(.accepted(status: 201), attempts: 1), count: instances * perInstance))
        for instance in 0..<instances {
            for (offset, subscription) in subscriptions[instance].enumerated() {
                let messages = try mock.messages(subscription: subscription.id)
                XCTAssertEqual(
                    Set(messages.compactMap { $0["plaintext"]?.stringValue }),
                    Set(stride(from: offset, to: perInstance, by: 4).map { #"{"i":\#(instance),"n":\#($0)}"# }))
                XCTAssertEqual(Set(messages.compactMap { $0["vapid"]?["k"]?.stringValue }), [keys[instance]])
            }
            XCTAssertEqual(senders[instance].stats().accepted, perInstance)
            _ = await senders[instance].shutdown(gracePeriod: .seconds(1))
        }
    }

    func testGoneSubscriptionsAreReportedForRemoval() async throws {
        let sender = try makeSender(try standInConfiguration())
        for (marker, status) in [("gone-404", 404), ("gone-410", 410)] {
            let result = await sender.send(try notification(try mock.createSubscription(marker: marker)))
            XCTAssertEqual(result, .response(.subscriptionGone(status: status), attempts: 1), marker)
        }
        XCTAssertEqual(sender.stats().subscriptionsGone, 2)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testCancellingTheRunEndsAWaitingRetryAtOnceAndItIsNeverSent() async throws {
        let sender = try makeSender(try standInConfiguration(retry: WebPushRetryPolicy(maxAttempts: 3)))
        let subscription = try mock.createSubscription(marker: "rate-limited", retryAfter: "30")
        let scope = RetryScope()
        var message = try notification(subscription)
        message.retries = scope
        let result = Locked<WebPushResult?>(nil)
        await sender.submit(message) { answer in result.withLock { $0 = answer } }
        try await eventually("the retry waits") { scope.waitingCount > 0 }
        XCTAssertEqual(scope.waitingCount, 1, "the 429 arrived and its retry waits 30 s")
        scope.cancel()
        XCTAssertEqual(result.withLock { $0 }, .failure(.cancelled(attempts: 1)), "reported by the cancel itself")
        XCTAssertEqual(sender.stats().requestsInFlight, 0, "its window slot is free")
        XCTAssertEqual(sender.stats().cancelled, 1)
        XCTAssertEqual(try mock.requests().count, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testARetryThatWouldGoOutAfterTheMessageTTLIsNotScheduled() async throws {
        let sender = try makeSender(try standInConfiguration(retry: WebPushRetryPolicy(maxAttempts: 3)))
        let subscription = try mock.createSubscription(marker: "rate-limited", retryAfter: "20")
        var message = try notification(subscription)
        message.deadline = RetryDeadline(expiresAt: nil, timeToLive: 5, from: Date())
        let started = Date()
        let result = await sender.send(message)
        XCTAssertEqual(result, .failure(.expired(attempts: 1)))
        XCTAssertLessThan(Date().timeIntervalSince(started), 4, "ended at the answer, not after the TTL")
        XCTAssertEqual(try mock.requests().count, 1)
        XCTAssertEqual(sender.stats().expired, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testRateLimitedMessageIsRetriedNoSoonerThanRetryAfter() async throws {
        let sender = try makeSender(
            try standInConfiguration(retry: WebPushRetryPolicy(maxAttempts: 2, initialDelay: 0.01)))
        let subscription = try mock.createSubscription(marker: "rate-limited", retryAfter: "1")
        let started = MonotonicClock.now()
        let result = await sender.send(try notification(subscription))
        let elapsed = MonotonicClock.elapsed(since: started)
        XCTAssertEqual(result, .response(.retry(status: 429, after: 1), attempts: 2))
        XCTAssertGreaterThanOrEqual(
            elapsed, .milliseconds(990), "the retry waited for Retry-After (1 s), not the policy's 10 ms")
        XCTAssertEqual(try mock.requests().filter { $0["status"]?.intValue == 429 }.count, 2)
        XCTAssertEqual(sender.stats().retries, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testHostOffTheAllowlistIsRefusedWithoutAConnection() async throws {
        var configuration = try standInConfiguration()
        configuration.allowedHosts = .knownPushServices  // the default: 127.0.0.1 is no push service
        let sender = try makeSender(configuration)
        let result = await sender.send(try notification(try mock.createSubscription()))
        XCTAssertEqual(
            result, .failure(.hostNotAllowed(String(mock.origin.dropFirst("https://".count)))), "named with its port")
        XCTAssertEqual(try mock.requests().count, 0)
        XCTAssertEqual(sender.stats().connectionsOpened, 0)
        XCTAssertEqual(sender.stats().refusedDestinations, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testLoopbackAddressIsRefusedBeforeConnectingEvenForAnAllowedHost() async throws {
        var configuration = try standInConfiguration()
        configuration.policy = DestinationPolicy()  // the default: no special-purpose address
        let sender = try makeSender(configuration)
        let result = await sender.send(try notification(try mock.createSubscription()))
        guard case .failure(.transport(let error, attempts: 1)) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .refusedDestination, error.message)
        XCTAssertEqual(try mock.requests().count, 0)
        XCTAssertEqual(sender.stats().connectionsOpened, 0)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    /// Open endpoints (UnifiedPush): any host on an allowed port, the loopback stand-in allowed by the policy only.
    private func openConfiguration(ports: Set<Int>? = nil, maxHosts: Int = 10, allowLoopback: Bool = true) throws
        -> WebPushSenderConfiguration
    {
        var configuration = try standInConfiguration()
        configuration.allowedHosts = .knownPushServices  // ignored with open endpoints
        let port = Int(mock.origin.split(separator: ":").last ?? "") ?? 0
        configuration.openEndpoints = WebPushOpenEndpoints(ports: ports ?? [port], maxHosts: maxHosts)
        if !allowLoopback { configuration.policy = DestinationPolicy() }
        return configuration
    }

    func testOpenEndpointsReachNtfyNextPushAndAutopushAndEachAnswerCounts() async throws {
        let sender = try makeSender(try openConfiguration())
        for (flavour, status) in [("ntfy", 200), ("nextpush", 201), ("autopush", 201)] {
            let subscription = try mock.createSubscription(flavour: flavour)
            let result = await sender.send(try notification(subscription))
            XCTAssertEqual(result, .response(.accepted(status: status), attempts: 1), flavour)
            XCTAssertEqual(try mock.messages(subscription: subscription.id).count, 1, flavour)
        }
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testOpenEndpointsRefuseAPortOffTheListWithoutAConnection() async throws {
        let sender = try makeSender(try openConfiguration(ports: [443]))
        let result = await sender.send(try notification(try mock.createSubscription(flavour: "ntfy")))
        XCTAssertEqual(result, .failure(.hostNotAllowed(String(mock.origin.dropFirst("https://".count)))))
        XCTAssertEqual(try mock.requests().count, 0)
        XCTAssertEqual(sender.stats().connectionsOpened, 0)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    /// The address judged is the one the socket connects to: `localhost` resolves to loopback inside curl, and the
    /// socket is refused there, so a name that answered a public address at registration and loopback now (DNS
    /// rebinding) reaches nothing.
    func testOpenEndpointsJudgeTheAddressCurlConnectsToSoANameResolvingToLoopbackIsRefused() async throws {
        let sender = try makeSender(try openConfiguration(allowLoopback: false))
        let subscription = try mock.createSubscription(flavour: "autopush")
        var named = try notification(subscription)
        named.subscription = try WebPushSubscription(
            endpoint: subscription.endpoint.replacingOccurrences(of: "127.0.0.1", with: "localhost"),
            p256dh: subscription.p256dh, auth: subscription.auth)
        for item in [try notification(subscription), named] {
            let result = await sender.send(item)
            guard case .failure(.transport(let error, _)) = result else { return XCTFail("\(result)") }
            XCTAssertEqual(error.kind, .refusedDestination, error.message)
        }
        XCTAssertEqual(try mock.requests().count, 0)
        XCTAssertEqual(sender.stats().connectionsOpened, 0)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testOpenEndpointsRefuseANewHostOverTheDistinctHostCap() async throws {
        let sender = try makeSender(try openConfiguration(maxHosts: 1))
        let subscription = try mock.createSubscription(flavour: "nextpush")
        let first = await sender.send(try notification(subscription))
        XCTAssertEqual(first, .response(.accepted(status: 201), attempts: 1))
        var other = try notification(subscription)
        other.subscription = try WebPushSubscription(
            endpoint: subscription.endpoint.replacingOccurrences(of: "127.0.0.1", with: "localhost"),
            p256dh: subscription.p256dh, auth: subscription.auth)
        let second = await sender.send(other)
        guard case .failure(.tooManyHosts(let host)) = second else { return XCTFail("\(second)") }
        XCTAssertTrue(host.hasPrefix("localhost:"), host)
        XCTAssertEqual(try mock.requests().count, 1)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testDistinctHostBookForgetsIdleHostsOnlyWhenFull() {
        var book = DistinctHostBook(limit: 2, idleSeconds: 60)
        XCTAssertTrue(book.admit("a", now: 0))
        XCTAssertTrue(book.admit("b", now: 10))
        XCTAssertFalse(book.admit("c", now: 50), "a and b are within the hour")
        XCTAssertTrue(book.admit("a", now: 55), "a known host is always admitted")
        XCTAssertTrue(book.admit("c", now: 71), "b idle for 61 s is forgotten")
        XCTAssertFalse(book.admit("d", now: 72))
        XCTAssertEqual(book.count, 2)
    }

    func testRequestSignedWithAnotherVAPIDKeyIsAConfigurationError() async throws {
        let sender = try makeSender(try standInConfiguration(), key: try VAPIDKeyPair.generate().keyPair)
        let result = await sender.send(try notification(try mock.createSubscription()))
        guard case .response(.configurationError(status: 403, _), attempts: 1) = result else {
            return XCTFail("\(result)")
        }
        XCTAssertEqual(try mock.messages().count, 0)
        _ = await sender.shutdown(gracePeriod: .seconds(1))
    }

    func testAllowlistMatchesExactHostsAndSubdomainsOnly() throws {
        let list = WebPushHostAllowlist.knownPushServices
        XCTAssertTrue(list.allows("updates.push.services.mozilla.com"))
        XCTAssertTrue(list.allows("wns2-par02p.notify.windows.com"))
        XCTAssertTrue(list.allows("fcm.googleapis.com"))
        XCTAssertFalse(list.allows("push.services.mozilla.com.evil.example"))
        XCTAssertFalse(list.allows("evilnotify.windows.com"))
        XCTAssertFalse(list.allows("notify.windows.com"), "*.suffix needs a subdomain")
        XCTAssertFalse(list.allows("fcm.googleapis.com.evil.example"))
        XCTAssertThrowsError(try WebPushHostAllowlist(parsing: ["*"]))
        XCTAssertThrowsError(try WebPushHostAllowlist(parsing: ["*.com"]))
        XCTAssertThrowsError(try WebPushHostAllowlist(parsing: ["host/path"]))
    }

    func testAnEndpointMustUsePort443UnlessItsPatternNamesAnother() throws {
        let list = try WebPushHostAllowlist(parsing: [
            "fcm.googleapis.com", "push.internal:8443", "*.push.example:9443",
            "other.example:443",
        ])
        func pattern(_ url: String) throws -> String? { list.pattern(for: try HTTPURL(url))?.description }
        XCTAssertEqual(try pattern("https://fcm.googleapis.com/x"), "fcm.googleapis.com")
        XCTAssertNil(
            try pattern("https://fcm.googleapis.com:8443/x"), "a push service's host on a port that drops connections")
        XCTAssertEqual(try pattern("https://push.internal:8443/x"), "push.internal:8443")
        XCTAssertNil(try pattern("https://push.internal/x"))
        XCTAssertEqual(try pattern("https://a.push.example:9443/x"), "*.push.example:9443")
        XCTAssertNil(try pattern("https://a.push.example/x"))
        XCTAssertEqual(try pattern("https://other.example/x"), "other.example", ":443 is the default")
        XCTAssertThrowsError(try WebPushHostAllowlist(parsing: ["host:0"]))
        XCTAssertThrowsError(try WebPushHostAllowlist(parsing: ["host:65536"]))
        XCTAssertThrowsError(try WebPushHostAllowlist(parsing: ["host:"]))
        XCTAssertThrowsError(try WebPushHostAllowlist(parsing: ["*.com:8443"]))
    }

    func testRetryPolicyHonoursRetryAfterAndItsBounds() {
        let policy = WebPushRetryPolicy(maxAttempts: 3, initialDelay: 1, maxDelay: 4, maxTotalDelay: 10)
        XCTAssertEqual(policy.delay(attempts: 1, elapsed: 0, retryAfter: nil), 1)
        XCTAssertEqual(policy.delay(attempts: 2, elapsed: 1, retryAfter: nil), 2)
        XCTAssertEqual(policy.delay(attempts: 1, elapsed: 0, retryAfter: 7), 7, "never sooner than Retry-After")
        XCTAssertNil(policy.delay(attempts: 3, elapsed: 0, retryAfter: nil), "attempts used up")
        XCTAssertNil(policy.delay(attempts: 1, elapsed: 5, retryAfter: 6), "total delay bound")
        XCTAssertEqual(
            policy.delay(attempts: 2, elapsed: 0, retryAfter: 1), 1, "Retry-After honoured as sent, below the backoff")
        XCTAssertEqual(
            policy.decide(attempts: 1, elapsed: 0, retryAfter: 30, secondsLeft: 5), .expire, "TTL 5: not past it")
        XCTAssertEqual(policy.decide(attempts: 1, elapsed: 0, retryAfter: nil, secondsLeft: 0.5), .expire)
        XCTAssertEqual(policy.decide(attempts: 1, elapsed: 0, retryAfter: 2, secondsLeft: 5), .retry(after: 2))
        XCTAssertEqual(
            policy.decide(attempts: 3, elapsed: 0, retryAfter: 1, secondsLeft: 0), .finish, "attempts used up")
        XCTAssertEqual(policy.decide(attempts: 1, elapsed: 0, retryAfter: 1, secondsLeft: nil), .retry(after: 1))
    }
}
