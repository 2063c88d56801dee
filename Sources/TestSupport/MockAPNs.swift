import Foundation
import JSON

/// Launches the strict mock APNs (`Tests/Support/mock_apns.py`: TLS, ALPN h2, HTTP/2, Apple's checks and
/// reasons) as a child process and drives it through its control API.
///
/// ```swift
/// let mock = try MockAPNs.start(teamID: "TEAM123456", keys: [(keyID: "KEY1234567", publicKeyPath: pem)],
///                               topics: ["com.example.app"])
/// defer { mock.stop() }
/// try mock.setBehaviour(token: token, MockAPNs.Behaviour(status: 410, reason: "Unregistered"))
/// // … point the client at mock.baseURL, trusting mock.caFile …
/// let requests = try mock.requests()
/// ```
///
/// Thread-safety: every method may be called from any thread, concurrently. The connection details are
/// immutable; each control call opens its own socket; the child process is a `MockProcess`.
/// The mock exits by itself when this process dies (it watches its stdin pipe), so a crashed test run leaves
/// no orphan.
package final class MockAPNs: Sendable {
    /// The HTTP/2 (TLS) port on 127.0.0.1.
    package let port: Int
    /// The control API port (plain HTTP/1.1 JSON) on 127.0.0.1.
    package let controlPort: Int
    /// The CA certificate (PEM) that signed the mock's server certificate: the client must trust it.
    package let caFile: String
    /// `https://127.0.0.1:<port>`: APNs requests go to `baseURL + "/3/device/<token>"`.
    package let baseURL: String
    /// The team ID the mock expects as the provider token's `iss`.
    package let teamID: String

    /// The child process, its start-up line and control API.
    private let process: MockProcess

    private init(process: MockProcess, port: Int, controlPort: Int, caFile: String, teamID: String) {
        self.port = port
        self.controlPort = controlPort
        self.caFile = caFile
        self.baseURL = "https://127.0.0.1:\(port)"
        self.teamID = teamID
        self.process = process
    }

    deinit {
        stop()  // backstop only: tests call stop() themselves
    }

    /// The package root, found from this file's path (`<root>/Sources/TestSupport/MockAPNs.swift`).
    package static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// The Python to run the mock with: `$PUSH_TEST_PYTHON`, else `<package root>/.venv/bin/python3`.
    package static var defaultPython: String {
        if let python = ProcessInfo.processInfo.environment["PUSH_TEST_PYTHON"], !python.isEmpty { return python }
        return packageRoot.appendingPathComponent(".venv/bin/python3").path
    }

    /// Starts a mock and waits (up to `startupTimeout` seconds) for it to listen.
    ///
    /// - Parameters:
    ///   - teamID: the provider token's expected `iss`.
    ///   - keys: the team's signing keys (key ID and public PEM path).
    ///   - topics: allowed bundle IDs; push-type suffixes (`.voip`, …) are derived by the mock.
    ///   - maxStreams: SETTINGS_MAX_CONCURRENT_STREAMS advertised after the first request with a valid token
    ///     (before it: 1, as APNs does). Default 1000.
    ///   - environment: `.sandbox` (default) also answers `apns-unique-id`.
    ///   - delayMs: delay for every answer (a slow APNs). Default 0.
    ///   - python: the interpreter; default `defaultPython`.
    ///   - extraArguments: more `mock_apns.py` options (e.g. `--lenient-push-type`).
    package static func start(
        teamID: String = "TEAMID1234",
        keys: [(keyID: String, publicKeyPath: String)],
        topics: [String],
        maxStreams: Int = 1000,
        environment: Environment = .sandbox,
        delayMs: Int = 0,
        python: String? = nil,
        extraArguments: [String] = [],
        startupTimeout: Double = 20
    ) throws(MockAPNsError) -> MockAPNs {
        var arguments = [
            "--team-id", teamID, "--max-streams", String(maxStreams),
            "--environment", environment.rawValue, "--delay-ms", String(delayMs),
        ]
        for key in keys { arguments += ["--key", "\(key.keyID)=\(key.publicKeyPath)"] }
        for topic in topics { arguments += ["--topic", topic] }
        arguments += extraArguments

        let process = try MockProcess(
            script: "mock_apns.py", arguments: arguments, python: python,
            startupTimeout: startupTimeout)
        guard let startup = try? MockJSONObject(.object(process.startup)),
            let port = try? startup.int("port"), let controlPort = try? startup.int("control_port"),
            let caFile = try? startup.string("ca_file")
        else {
            process.stop()
            throw .noStartupLine("unexpected line: \(JSONValue.object(process.startup))")
        }
        return MockAPNs(process: process, port: port, controlPort: controlPort, caFile: caFile, teamID: teamID)
    }

    /// Whether the child process is still running.
    package var isRunning: Bool { process.isRunning }

    /// Stops the mock (SIGTERM, and EOF on its stdin) and waits for it to exit. Safe to call twice.
    package func stop() { process.stop() }

    // MARK: Control API

    /// Scripts the answer for `token` (or every token starting with `prefix` when the key ends in `*`).
    package func setBehaviour(token: String, _ behaviour: Behaviour) throws(MockAPNsError) {
        _ = try call("PUT", "/behaviours/\(token)", body: behaviour.json)
    }

    /// Removes the behaviour of one token (or prefix key ending in `*`).
    package func clearBehaviour(token: String) throws(MockAPNsError) {
        _ = try call("DELETE", "/behaviours/\(token)")
    }

    /// Removes every behaviour.
    package func clearBehaviours() throws(MockAPNsError) {
        _ = try call("DELETE", "/behaviours")
    }

    /// Changes run-time switches (nil fields unchanged) and returns the whole configuration now in effect.
    @discardableResult
    package func setConfig(_ config: Config) throws(MockAPNsError) -> Config {
        try decode(try call("PUT", "/config", body: config.json), request: "PUT /config", Config.init(json:))
    }

    /// The recorded requests (oldest first), optionally only those for `token` or with `seq` above `since`.
    package func requests(token: String? = nil, since: Int = 0) throws(MockAPNsError) -> [Request] {
        var path = "/requests?since=\(since)"
        if let token { path += "&token=\(token)" }
        return try decode(try call("GET", path), request: "GET /requests") { (value) throws(MockJSONError) in
            guard let items = value.arrayValue else { throw MockJSONError("(answer)", "expected an array") }
            return try items.map { (item) throws(MockJSONError) in try Request(json: item) }
        }
    }

    /// Polls `requests(token:)` until at least `count` are recorded (every 20 ms, up to `timeout` seconds) and
    /// returns them; for clients that answer before the mock has finished recording, or that send in background.
    package func waitForRequests(count: Int, token: String? = nil, timeout: Double = 5) throws(MockAPNsError)
        -> [Request]
    {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let found = try requests(token: token)
            if found.count >= count || Date() >= deadline { return found }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }

    /// Counters; `includeTokens: false` leaves out the per-token counts (large after a 100k-token run).
    package func stats(includeTokens: Bool = true) throws(MockAPNsError) -> Stats {
        try decode(
            try call("GET", includeTokens ? "/stats" : "/stats?tokens=0"), request: "GET /stats", Stats.init(json:))
    }

    /// Clears behaviours, recorded requests and counters, and restores the start-up configuration. Open
    /// connections keep their HTTP/2 and provider-token state, as APNs connections would.
    package func reset() throws(MockAPNsError) {
        _ = try call("POST", "/reset")
    }

    /// Any control call answered with JSON, for the broadcast channel routes (`GET /broadcasts`, `GET /channels`,
    /// `PUT /broadcast/config`, see Tests/Support/README.md).
    package func control(_ method: String, _ path: String, body: JSONValue? = nil) throws(MockAPNsError) -> JSONValue {
        try decode(try call(method, path, body: body), request: "\(method) \(path)") { $0 }
    }

    private func call(_ method: String, _ path: String, body: JSONValue? = nil) throws(MockAPNsError) -> Data {
        try process.callRaw(method, path, body: body)
    }

    private func decode<T>(
        _ data: Data, request: String, _ read: (JSONValue) throws(MockJSONError) -> T
    ) throws(MockAPNsError) -> T {
        let value: JSONValue
        do {
            // Trusted input that can be large (10,000 recorded requests, per-token counts after a 100k run).
            value = try JSONValue(parsing: data, limits: JSONLimits(maxBytes: 1 << 30))
        } catch {
            throw .decoding(request: request, detail: "\(error)")
        }
        do {
            return try read(value)
        } catch {
            throw .decoding(request: request, detail: "\(error)")
        }
    }
}
