import Foundation
import HTTPServer
import TestSupport
import XCTest

/// HTTPS with a self-signed certificate made in the test, checked with curl and Python `requests`.
final class TLSTests: XCTestCase {
    var directory: URL!
    var certificate: String { directory.appendingPathComponent("cert.pem").path }
    var key: String { directory.appendingPathComponent("key.pem").path }

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("http-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let result = try run(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-nodes", "-keyout", key, "-out", certificate, "-days", "1",
                "-subj", "/CN=localhost",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ])
        XCTAssertEqual(result.status, 0, result.output)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// stdout and stderr together, as the assertions read openssl's and curl's messages from either.
    private func run(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> (
        status: Int32, output: String
    ) {
        let outcome = try ChildProcess.run(executable, arguments, input: input)
        return (outcome.status, outcome.output + outcome.errors)
    }

    private func tlsServer(limits: HTTPLimits = TestServer.fastLimits) throws -> TestServer {
        try TestServer(limits: limits, tls: TLSConfiguration(certificateChainPath: certificate, privateKeyPath: key))
    }

    func testCurlRoundTripNegotiatesHTTP11AndReusesConnection() throws {
        let server = try tlsServer()
        defer { server.stop() }
        let base = "https://127.0.0.1:\(server.port)"
        // --http2 offers h2 and http/1.1 via ALPN: the server must pick http/1.1.
        let result = try run(
            "/usr/bin/curl",
            [
                "-sv", "--http2", "--cacert", certificate, "--max-time", "10",
                "\(base)/info", "\(base)/items/7?q=tls",
            ])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(
            result.output.contains("ALPN: server accepted http/1.1")
                || result.output.contains("ALPN, server accepted to use http/1.1"),
            result.output)
        XCTAssertTrue(result.output.contains(#""tls":"yes""#), result.output)
        XCTAssertTrue(result.output.contains(#""id":"7""#), result.output)
        XCTAssertFalse(result.output.contains("HTTP/2 200"))
        XCTAssertEqual(server.server.acceptedConnections, 1, "keep-alive over TLS")
    }

    func testPythonRequestsPostsLargeBodyOverTLS() throws {
        let server = try tlsServer()
        defer { server.stop() }
        // The venv's Python when `make` runs the tests, else whichever python3 is on PATH.
        let python = ProcessInfo.processInfo.environment["PUSH_TEST_PYTHON"]
        let script = """
            import sys, requests
            s = requests.Session()
            body = bytes(range(256)) * 200
            r = s.post("https://127.0.0.1:\(server.port)/echo", data=body, verify="\(certificate)", timeout=10)
            assert r.status_code == 200, r.status_code
            assert r.content == body, len(r.content)
            r = s.get("https://127.0.0.1:\(server.port)/health", verify="\(certificate)", timeout=10)
            print(r.status_code, r.text)
            """
        let result = try python.map { try run($0, ["-c", script]) } ?? run("/usr/bin/env", ["python3", "-c", script])
        if result.output.contains("No module named 'requests'") { throw XCTSkip("python has no requests module") }
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains(#"200 {"status":"ok"}"#), result.output)
    }

    func testUntrustedClientFailsVerificationAndServerStaysUp() throws {
        let server = try tlsServer()
        defer { server.stop() }
        let result = try run("/usr/bin/curl", ["-s", "--max-time", "5", "https://127.0.0.1:\(server.port)/health"])
        XCTAssertNotEqual(result.status, 0, "self-signed cert must not verify against the system store")
        let ok = try run(
            "/usr/bin/curl",
            ["-s", "--cacert", certificate, "--max-time", "5", "https://127.0.0.1:\(server.port)/health"])
        XCTAssertEqual(ok.output, #"{"status":"ok"}"#)
    }

    func testTLS11IsRefused() throws {
        let server = try tlsServer()
        defer { server.stop() }
        let result = try run(
            "/usr/bin/openssl",
            [
                "s_client", "-connect", "127.0.0.1:\(server.port)", "-tls1_1",
                "-CAfile", certificate,
            ], input: Data())
        XCTAssertTrue(
            result.output.contains("alert protocol version") || result.output.contains("no protocols available"),
            result.output)
        let modern = try run(
            "/usr/bin/openssl",
            [
                "s_client", "-connect", "127.0.0.1:\(server.port)", "-tls1_2",
                "-alpn", "h2,http/1.1", "-CAfile", certificate,
            ], input: Data())
        XCTAssertTrue(modern.output.contains("ALPN protocol: http/1.1"), modern.output)
    }

    func testHandshakeTimeoutClosesSilentClient() throws {
        let server = try tlsServer()  // handshake timeout 0.6 s
        defer { server.stop() }
        let silent = try server.client()
        let start = Date()
        XCTAssertTrue(silent.waitForClose(within: 3))
        let took = Date().timeIntervalSince(start)
        XCTAssertGreaterThan(took, 0.4)
        XCTAssertLessThan(took, 2)
        try eventually("no open connections") { server.server.openConnections == 0 }
        XCTAssertEqual(server.server.openConnections, 0)
    }

    func testPlainHTTPOnTLSPortIsClosedWithoutCrash() throws {
        let server = try tlsServer()
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /health HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertTrue(client.waitForClose(within: 3))
        let ok = try run(
            "/usr/bin/curl",
            ["-s", "--cacert", certificate, "--max-time", "5", "https://127.0.0.1:\(server.port)/health"])
        XCTAssertEqual(ok.output, #"{"status":"ok"}"#)
    }

    func testMissingCertificateFileFailsStartWithOpenSSLMessage() {
        let server = HTTPServer(
            configuration: HTTPServerConfiguration(
                port: 0, tls: TLSConfiguration(certificateChainPath: "/nonexistent/cert.pem", privateKeyPath: key)),
            router: Router())
        XCTAssertThrowsError(try server.start()) { error in
            let e = error as? HTTPServerError
            XCTAssertEqual(e?.operation, "SSL_CTX_use_certificate_chain_file")
            XCTAssertFalse(e?.message.isEmpty ?? true)
        }
    }
}
