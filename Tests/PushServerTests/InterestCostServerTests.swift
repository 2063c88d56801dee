import BeamsModel
import Foundation
import JSON
import Logging
import PushServer
import TestSupport
import XCTest

/// What a `PUT …/interests` costs, over real sockets: every array element is charged to the client's address, and
/// an array longer than the per-device cap is refused where its surplus starts (issue 25: 229,000 copies of one
/// name used to cost one rate token and a full parse, validation and write each).
final class InterestCostServerTests: XCTestCase {
    private let intake = IntakeRequests(secret: "interest-cost-test-secret-0123456789abcdef")
    private var directory: URL!

    override func setUp() {
        super.setUp()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("interest-cost-\(UUID().uuidString)")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    private func withServer(
        ipBurst: Int, configure: (inout ServerConfig) -> Void = { _ in },
        _ body: (Int, String) async throws -> Void
    ) async throws {
        var config = intake.serverConfig()
        configure(&config)
        config.storage.path = directory.appendingPathComponent("push.sqlite").path
        config.limits.ipRequestsPerSecond = 1
        config.limits.ipBurst = ipBurst
        let app = try await Application(
            config: config, logger: Logger(label: "server", level: .error), gracePeriod: .seconds(1))
        let port = try app.start()
        let running = Task { await app.run() }
        let registered = try await intake.register(on: port)
        XCTAssertEqual(registered.status, 200, registered.bodyText)
        let deviceID = try XCTUnwrap(registered.jsonObject?["id"]?.stringValue)
        do {
            try await body(port, "\(intake.registerPath)/\(deviceID)/interests")
        } catch {
            app.shutdown()
            _ = await running.value
            await app.close()
            throw error
        }
        app.shutdown()
        _ = await running.value
        await app.close()
    }

    private func put(_ port: Int, _ path: String, _ body: String) async throws -> RawHTTPResponse {
        try await rawRequest(port, "PUT", path, headers: intake.json, body: body)
    }

    private func body(_ names: some Sequence<String>, then tail: String = "]}") -> String {
        #"{"interests":["# + names.map { "\"\($0)\"" }.joined(separator: ",") + tail
    }

    func testDuplicateInterestNamesAreChargedPerElementAsReceived() async throws {
        // 600 tokens, 1 per second: the registration takes 1; 5000 copies of one name cost 500.
        try await withServer(ipBurst: 600) { port, path in
            let copies = body(repeatElement("same", count: 5000))
            let first = try await put(port, path, copies)
            XCTAssertEqual(first.status, 200, first.bodyText)
            let second = try await put(port, path, copies)
            XCTAssertEqual(second.status, 429, "5000 copies of one name must cost as much as 5000 names")
            XCTAssertEqual(second.jsonObject?["error"]?.stringValue, "Rate Limited")
            // The set holds the name once.
            let stored = try await rawRequest(port, "GET", path)
            XCTAssertEqual(stored.jsonObject?["interests"], ["same"], stored.bodyText)
        }
    }

    func testAnAddressThatSentAFullSetWaitsForNewNamesButNotForOtherRequests() async throws {
        // A request budget large enough for three full sets: what refuses the second set is the address's interest
        // budget (`ipInterestsPerSecond`, default 100 a second on a bucket of one full set), not the request one.
        try await withServer(ipBurst: 20_000) { port, path in
            let first = try await put(port, path, body((0..<5000).map { "first-\($0)" }))
            XCTAssertEqual(first.status, 200, first.bodyText)
            let second = try await put(port, path, body((0..<5000).map { "second-\($0)" }))
            XCTAssertEqual(second.status, 429, "a second set of 5,000 new names must wait for the interest budget")
            XCTAssertEqual(second.jsonObject?["error"]?.stringValue, "Rate Limited")
            let retryAfter = try XCTUnwrap(second.header("Retry-After").flatMap { Int($0) }, second.bodyText)
            XCTAssertGreaterThanOrEqual(retryAfter, 40, "5,000 names at 100 a second")
            // The address's other requests still pass: reading the set, a registration.
            let stored = try await rawRequest(port, "GET", path)
            XCTAssertEqual(stored.status, 200, stored.bodyText)
            let other = try await intake.register(
                on: port, body: intake.registration.replacingOccurrences(of: "abab", with: "cdcd"))
            XCTAssertEqual(other.status, 200, other.bodyText)
            let metrics = try await rawRequest(port, "GET", "/metrics").bodyText
            XCTAssertTrue(metrics.contains(#"push_rate_limited_total{limit="ip_interests"} 1"#), metrics)
        }
    }

    func testAnArrayLongerThanThePerDeviceCapIsRefusedBeforeTheRestIsRead() async throws {
        try await withServer(ipBurst: 1_000) { port, path in
            // 229,000 copies of one name, 916 KB: within the body limit, one distinct name.
            let flood = try await put(port, path, body(repeatElement("a", count: 229_000)))
            XCTAssertEqual(flood.status, 400, flood.bodyText)
            XCTAssertEqual(flood.jsonObject?["error"]?.stringValue, "Bad request")
            XCTAssertEqual(flood.jsonObject?["description"]?.stringValue, BeamsError.tooManyInterests.detail)
            // The surplus is never parsed nor validated: broken JSON or an invalid name after the 5000th element
            // still gets the cap's answer, not "invalid JSON" or "invalid interest".
            let valid = (0..<5000).map { "n\($0)" }
            for tail in [#","bad name!"]}"#, #",{{{{"#] {
                let refused = try await put(port, path, body(valid, then: tail))
                XCTAssertEqual(refused.status, 400, refused.bodyText)
                XCTAssertEqual(refused.jsonObject?["description"]?.stringValue, BeamsError.tooManyInterests.detail)
            }
            // Exactly the cap still passes; nothing of the refused requests was stored.
            let before = try await rawRequest(port, "GET", path)
            XCTAssertEqual(before.jsonObject?["interests"], [], before.bodyText)
            let full = try await put(port, path, body(valid))
            XCTAssertEqual(full.status, 200, full.bodyText)
        }
    }

    func testInterestWritesBeyondTheInstanceCapsAreRefusedWith400AndCounted() async throws {
        try await withServer(
            ipBurst: 500,
            configure: {
                $0.limits.maxInterestsPerInstance = 3
                $0.limits.maxSubscriptionsPerInstance = 4
            }
        ) { port, path in
            let first = try await put(port, path, body(["a", "b", "c"]))
            XCTAssertEqual(first.status, 200, first.bodyText)
            let names = try await put(port, path, body(["a", "b", "c", "d"]))
            XCTAssertEqual(names.status, 400, names.bodyText)
            XCTAssertEqual(names.jsonObject?["error"]?.stringValue, "Bad request")
            XCTAssertEqual(names.jsonObject?["description"]?.stringValue, BeamsError.instanceInterestLimit.detail)
            let added = try await rawRequest(port, "POST", "\(path)/d")
            XCTAssertEqual(added.status, 400, added.bodyText)
            XCTAssertEqual(added.jsonObject?["description"]?.stringValue, BeamsError.instanceInterestLimit.detail)
            // A second device following the same names adds subscriptions, not names.
            let other = try await intake.register(
                on: port, body: intake.registration.replacingOccurrences(of: "abab", with: "cdcd"))
            let otherID = try XCTUnwrap(other.jsonObject?["id"]?.stringValue)
            let otherPath = "\(intake.registerPath)/\(otherID)/interests"
            let subscriptions = try await put(port, otherPath, body(["a", "b"]))
            XCTAssertEqual(subscriptions.status, 400, subscriptions.bodyText)
            XCTAssertEqual(
                subscriptions.jsonObject?["description"]?.stringValue,
                BeamsError.instanceSubscriptionLimit.detail)
            let one = try await put(port, otherPath, body(["a"]))
            XCTAssertEqual(one.status, 200, one.bodyText)
            let stored = try await rawRequest(port, "GET", path)
            XCTAssertEqual(stored.jsonObject?["interests"], ["a", "b", "c"], stored.bodyText)
            let metrics = try await rawRequest(port, "GET", "/metrics").bodyText
            XCTAssertTrue(metrics.contains(#"push_interest_limit_refusals_total{limit="interests"} 2"#), metrics)
            XCTAssertTrue(metrics.contains(#"push_interest_limit_refusals_total{limit="subscriptions"} 1"#), metrics)
        }
    }
}
