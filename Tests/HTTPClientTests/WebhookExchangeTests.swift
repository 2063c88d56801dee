import Foundation
import HTTPClient
import XCTest

/// `HTTPExchangeClient` as the webhook outbox configures it (`HTTPExchangeConfiguration.webhooks`), against real
/// local receivers: what is sent, what is refused before any connection, and every cut.
final class WebhookExchangeTests: XCTestCase {
    private var receivers: [TestReceiver] = []
    private var clients: [HTTPExchangeClient] = []

    override func tearDown() async throws {
        for client in clients { await client.shutdown() }
        for receiver in receivers { receiver.close() }
        clients = []
        receivers = []
    }

    private func receiver(_ answer: TestReceiver.Answer) throws -> TestReceiver {
        let receiver = try TestReceiver(answer)
        receivers.append(receiver)
        return receiver
    }

    private func client(
        allowing entries: [String] = [], timeout: Duration = .seconds(5),
        maxResponseBytes: Int = 64 * 1024
    ) throws -> HTTPExchangeClient {
        let policy = DestinationPolicy(allowances: try entries.map { try DestinationPolicy.Allowance(parsing: $0) })
        let client = try HTTPExchangeClient(
            configuration: .webhooks(
                policy: policy, timeout: timeout, connectTimeout: .seconds(2), maxResponseBytes: maxResponseBytes))
        clients.append(client)
        return client
    }

    private static func post(_ url: String, headers: [String] = [], body: [UInt8] = Array("{}".utf8)) throws
        -> HTTPExchange
    {
        HTTPExchange(url: try HTTPURL(url), headers: headers, body: body)
    }

    /// The error `send` threw, or a test failure if it answered.
    private func failure(
        _ client: HTTPExchangeClient, _ url: String, file: StaticString = #filePath,
        line: UInt = #line
    ) async throws -> HTTPExchangeError? {
        let exchange = try Self.post(url)
        do {
            let status = try await client.send(exchange).status
            XCTFail("expected a failure, got HTTP \(status)", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    private static let noContent = "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"

    func testPostsBodyHeadersAndURLCredentialsToAnAllowedReceiver() async throws {
        let hook = try receiver(.respond(Self.noContent))
        let client = try client(allowing: ["127.0.0.1"])
        let body = Array(String(repeating: "x", count: 5000).utf8)  // > 1 KiB: no Expect: 100-continue wait
        let status = try await client.send(
            Self.post(
                hook.url("/hook?a=1", credentials: "user:p%40ss@"),
                headers: ["Content-Type: application/json", "X-Test: 1"], body: body)
        ).status
        XCTAssertEqual(status, 204)
        let request = try XCTUnwrap(hook.received.first)
        XCTAssertTrue(request.head.hasPrefix("POST /hook?a=1 HTTP/1.1\r\n"), request.head)
        XCTAssertEqual(request.header("Content-Type"), "application/json")
        XCTAssertEqual(request.header("X-Test"), "1")
        XCTAssertEqual(request.header("Authorization"), "Basic " + Data("user:p@ss".utf8).base64EncodedString())
        XCTAssertNil(request.header("Expect"))
        XCTAssertEqual(request.body, body)
    }

    /// The driver reuses the easy handle of an exchange that ended well (one loop here, so every exchange after the
    /// first runs on the previous one's handle): nothing of the previous request may carry over, neither its
    /// method, body, headers nor response.
    func testAnExchangeOnAReusedHandleCarriesNothingOfThePreviousOne() async throws {
        let hook = try receiver(.respond("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nRetry-After: 7\r\n\r\nfirst"))
        let plain = try receiver(.respond(Self.noContent))
        let client = try client(allowing: ["127.0.0.1"])
        let body = Array(String(repeating: "y", count: 3000).utf8)
        let first = try await client.send(
            Self.post(hook.url("/one"), headers: ["X-First: 1", "Content-Type: text/plain"], body: body))
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.body, Array("first".utf8))
        var get = try Self.post(plain.url("/two"), headers: ["X-Second: 2"], body: [])
        get.method = .get
        let second = try await client.send(get)
        XCTAssertEqual(second, HTTPExchangeResponse(status: 204))
        var delete = try Self.post(plain.url("/three"), headers: ["X-Third: 3"], body: [])
        delete.method = .delete
        let third = try await client.send(delete)
        XCTAssertEqual(third.status, 204)
        let fourth = try await client.send(Self.post(plain.url("/four"), body: Array("{}".utf8)))
        XCTAssertEqual(fourth.status, 204)
        let requests = plain.received
        XCTAssertEqual(requests.count, 3)
        XCTAssertTrue(requests[0].head.hasPrefix("GET /two HTTP/1.1\r\n"), requests[0].head)
        XCTAssertTrue(requests[1].head.hasPrefix("DELETE /three HTTP/1.1\r\n"), requests[1].head)
        XCTAssertTrue(requests[2].head.hasPrefix("POST /four HTTP/1.1\r\n"), requests[2].head)
        XCTAssertEqual(requests.map { $0.header("X-First") }, [nil, nil, nil])
        XCTAssertEqual(requests.map { $0.header("X-Second") }, ["2", nil, nil])
        XCTAssertEqual(requests.map { $0.header("Content-Length") }, [nil, nil, "2"])
        XCTAssertEqual(requests.map(\.body), [[], [], Array("{}".utf8)])
    }

    func testRefusesLoopbackByDefaultWithoutConnecting() async throws {
        let hook = try receiver(.respond(Self.noContent))
        let client = try client()
        let error = try await failure(client, hook.url())
        XCTAssertEqual(error?.kind, .refusedDestination)
        XCTAssertEqual(error?.message, "http://127.0.0.1:\(hook.port) refused: 127.0.0.1 is loopback (127.0.0.0/8)")
        XCTAssertEqual(hook.accepted, 0)
    }

    func testRefusesANameThatResolvesToLoopbackAndTheMappedIPv6Form() async throws {
        let hook = try receiver(.respond(Self.noContent))
        let client = try client(allowing: ["10.0.0.0/8"])
        let named = try await failure(client, "http://localhost:\(hook.port)/hook")
        XCTAssertEqual(named?.kind, .refusedDestination, "\(String(describing: named))")
        let mapped = try await failure(client, "http://[::ffff:127.0.0.1]:\(hook.port)/hook")
        XCTAssertEqual(mapped?.kind, .refusedDestination, "\(String(describing: mapped))")
        XCTAssertEqual(hook.accepted, 0)
    }

    func testAllowanceOfOneAddressLeavesTheRestOfLoopbackRefused() async throws {
        // Only local addresses here: if the policy ever regressed, a test must not send traffic off this host
        // (every range is covered without sockets in DestinationPolicyTests).
        let hook = try receiver(.respond(Self.noContent))
        let client = try client(allowing: ["127.0.0.1"])
        for host in ["127.0.0.2", "[::1]", "0.0.0.0", "[::]", "[::ffff:127.0.0.2]"] {
            let error = try await failure(client, "http://\(host):\(hook.port)/hook")
            XCTAssertEqual(error?.kind, .refusedDestination, "\(host): \(String(describing: error))")
        }
        XCTAssertEqual(hook.accepted, 0)
    }

    func testAllowedHostNameReachesItsLoopbackAddress() async throws {
        let hook = try receiver(.respond(Self.noContent))
        let client = try client(allowing: ["localhost"])
        let status = try await client.send(Self.post("http://localhost:\(hook.port)/hook", body: [])).status
        XCTAssertEqual(status, 204)
        XCTAssertEqual(hook.received.count, 1)
    }

    func testDoesNotFollowRedirects() async throws {
        let target = try receiver(.respond(Self.noContent))
        let redirecting = try receiver(
            .respond(
                "HTTP/1.1 302 Found\r\nLocation: \(target.url("/elsewhere"))\r\nContent-Length: 0\r\n\r\n"))
        let client = try client(allowing: ["127.0.0.1"])
        let status = try await client.send(Self.post(redirecting.url())).status
        XCTAssertEqual(status, 302)
        XCTAssertEqual(redirecting.received.count, 1)
        XCTAssertEqual(target.accepted, 0)
    }

    func testSilentReceiverIsCutAtTheTimeLimit() async throws {
        let hook = try receiver(.silent)
        let client = try client(allowing: ["127.0.0.1"], timeout: .seconds(1))
        let started = Date()
        let error = try await failure(client, hook.url())
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(error?.kind, .timeout, "\(String(describing: error))")
        XCTAssertGreaterThanOrEqual(elapsed, 0.9)
        XCTAssertLessThan(elapsed, 4)
    }

    func testEndlessResponseIsCutAtTheSizeCap() async throws {
        let hook = try receiver(.endless)
        let client = try client(allowing: ["127.0.0.1"], timeout: .seconds(30), maxResponseBytes: 4096)
        let started = Date()
        let error = try await failure(client, hook.url())
        XCTAssertEqual(error?.kind, .responseTooLarge, "\(String(describing: error))")
        XCTAssertEqual(error?.message, "http://127.0.0.1:\(hook.port): response larger than 4096 bytes")
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "cut by size, not by the 30 s limit")
    }

    func testAnnouncedOversizedBodyIsRefusedBeforeItIsRead() async throws {
        let hook = try receiver(.respond("HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\nabc"))
        let client = try client(allowing: ["127.0.0.1"], maxResponseBytes: 4096)
        let error = try await failure(client, hook.url())
        XCTAssertEqual(error?.kind, .responseTooLarge, "\(String(describing: error))")
    }

    func testOtherSchemesAndMalformedURLsNeverBecomeAnExchange() throws {
        for url in [
            "ftp://127.0.0.1/x", "file:///etc/passwd", "gopher://127.0.0.1:70/", "http://exa mple/", "not a url",
        ] {
            XCTAssertThrowsError(try Self.post(url), url)
        }
    }

    func testShutdownFailsTheTransferInFlightAndLaterPosts() async throws {
        let hook = try receiver(.silent)
        let client = try client(allowing: ["127.0.0.1"], timeout: .seconds(30))
        let url = hook.url()
        let exchange = try Self.post(url, body: [])
        let pending = Task { () -> HTTPExchangeError? in
            do throws(HTTPExchangeError) {
                _ = try await client.send(exchange)
                return nil
            } catch {
                return error
            }
        }
        XCTAssertTrue(hook.waitForRequests(1))
        await client.shutdown()
        let error = await pending.value
        XCTAssertEqual(error?.kind, .shutdown)
        let later = try await failure(client, hook.url())
        XCTAssertEqual(later?.kind, .shutdown)
        await client.shutdown()  // idempotent
    }
}
