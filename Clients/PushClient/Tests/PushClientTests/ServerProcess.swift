import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import PushClient
import XCTest

/// The real push-server binary on 127.0.0.1 with a fresh database: what the client's integration tests talk to.
///
/// The binary is `$PUSH_SERVER_BIN`, else the repository's `.build/release/push-server` (`make test-clients` builds
/// it first). The instance has no APNs credentials: publishes are accepted and recorded as not sent, which is enough
/// to see which devices a publish reaches.
final class ServerProcess: @unchecked Sendable {
    // @unchecked: the mutable fields are written before `start()` returns and read afterwards on the test's thread;
    // `output` is guarded by `lock`.
    static let instanceID = "2b1c9a6e-5d4f-4e3a-9b8c-7d6e5f4a3b21"
    static let secret = "client-test-secret-0123456789abcdef"

    /// The port the tests' UnifiedPush endpoints name (`https://127.0.0.1:8443/…`), allowed by the instance.
    static let unifiedPushPort = 8443

    let directory: URL
    let configPath: URL
    private(set) var port = 0
    private var process: Process?
    private let lock = NSLock()
    private var output = Data()

    static var binary: String {
        if let path = ProcessInfo.processInfo.environment["PUSH_SERVER_BIN"], !path.isEmpty { return path }
        return URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../../.build/release/push-server").standardizedFileURL.path
    }

    /// - Parameter port: 0 lets the kernel choose (read back from the log); a fixed one restarts on a known port.
    init(port: Int = 0) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-client-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        configPath = directory.appendingPathComponent("config.json")
        self.port = port
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Starts the binary and returns once it logged the port it listens on.
    func start() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw XCTSkip("no push-server binary at \(Self.binary): run `make test-clients` (or set PUSH_SERVER_BIN)")
        }
        // UnifiedPush needs the `web` VAPID key; its endpoints may point at 127.0.0.1 on `unifiedPushPort` (nothing
        // listens there: registration resolves the host and connects nowhere).
        let vapidKey = directory.appendingPathComponent("vapid.pem")
        if !FileManager.default.fileExists(atPath: vapidKey.path) { try Self.run(["vapid-keygen", vapidKey.path]) }
        let config: [String: Any] = [
            "listen": ["host": "127.0.0.1", "port": port],
            "storage": ["path": directory.appendingPathComponent("push.sqlite").path],
            "log": ["level": "info"],
            "instances": [["id": Self.instanceID, "secretKey": Self.secret,
                           "apns": ["topic": "com.example.client", "defaultEnvironment": "production"],
                           "web": ["vapidKeyFile": vapidKey.path, "subject": "mailto:ops@example.com"],
                           "unifiedpush": ["ports": [Self.unifiedPushPort], "allowedDestinations": ["127.0.0.1"]]]],
        ]
        try JSONSerialization.data(withJSONObject: config).write(to: configPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary)
        process.arguments = ["serve", "--config", configPath.path]
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let listening = DispatchSemaphore(value: 0)
        let signalled = Locked(false)
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let chunk = handle.availableData
            guard let self else { return }
            // Keep draining: a full pipe would block the server's log writes.
            self.lock.lock()
            self.output.append(chunk)
            let text = String(decoding: self.output, as: UTF8.self)
            self.lock.unlock()
            if chunk.isEmpty { handle.readabilityHandler = nil }
            if (text.contains("Listening") || chunk.isEmpty), signalled.set(true) == false { listening.signal() }
        }
        try process.run()
        self.process = process
        guard listening.wait(timeout: .now() + 20) == .success, let port = listenedPort() else {
            stop()
            throw NSError(domain: "ServerProcess", code: 1, userInfo: [NSLocalizedDescriptionKey: "push-server did not start: \(log)"])
        }
        self.port = port
    }

    var log: String {
        lock.lock()
        defer { lock.unlock() }
        return String(decoding: output, as: UTF8.self)
    }

    private func listenedPort() -> Int? {
        for line in log.split(separator: "\n") where line.contains("Listening") {
            for field in line.split(separator: " ") where field.hasPrefix("port=") {
                return Int(field.dropFirst(5).trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            }
        }
        return nil
    }

    /// SIGTERM and wait (the server drains and exits).
    func stop() {
        guard let process, process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    // MARK: Calls the tests make on the server's other APIs (secret-key and device API)

    func call(_ method: String, _ path: String, body: Any? = nil, secret: Bool = true) async throws -> (Int, Any?) {
        var request = URLRequest(url: URL(string: path, relativeTo: baseURL)!.absoluteURL)
        request.httpMethod = method
        if secret { request.setValue("Bearer \(Self.secret)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
        }
        let (status, data) = try await URLSessionTransport().send(
            method: method, url: request.url!, headers: request.allHTTPHeaderFields ?? [:], body: request.httpBody)
        return (status, data.isEmpty ? nil : try? JSONSerialization.jsonObject(with: data))
    }

    /// GET one of a device's device-API resources (`interests`, `live-activity`), without the secret, as the app would.
    /// - Returns: the status and the JSON body.
    func deviceResource(_ deviceID: String, _ resource: String, platform: String = "apns") async throws -> (Int, Any?) {
        try await call("GET", "/device_api/v1/instances/\(Self.instanceID)/devices/\(platform)/\(deviceID)/\(resource)",
                       secret: false)
    }

    /// The device-health card of the device with this id (nil on 404).
    func device(id: String) async throws -> [String: Any]? {
        let (status, body) = try await call("GET", "/admin_api/v1/instances/\(Self.instanceID)/devices/\(id)")
        return status == 200 ? body as? [String: Any] : nil
    }

    /// The device-health card of the device with this token (nil on 404).
    func device(token: String, platform: String = "apns") async throws -> [String: Any]? {
        let (status, body) = try await call(
            "GET", "/admin_api/v1/instances/\(Self.instanceID)/devices?platform=\(platform)&token=\(token)")
        return status == 200 ? body as? [String: Any] : nil
    }

    /// `push-server token`: a Beams user token signed with the instance secret, as an app's backend would issue.
    func userToken(_ user: String) throws -> String {
        try Self.run(["token", "--config", configPath.path, "--instance", Self.instanceID, "--user", user])
    }

    /// Runs a `push-server` command. - Returns: its output, trimmed.
    @discardableResult
    static func run(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PushClientTestError("push-server \(arguments[0]) exited \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Publishes to interests and waits until the publish is finished. - Returns: its status document.
    func publishAndWait(interests: [String]) async throws -> [String: Any] {
        let (status, body) = try await call("POST", "/publish_api/v1/instances/\(Self.instanceID)/publishes/interests",
                                            body: ["interests": interests, "apns": ["aps": ["alert": "hi"]]])
        guard status == 200, let id = (body as? [String: Any])?["publishId"] as? String else {
            throw PushClientTestError("publish failed: \(status) \(String(describing: body))")
        }
        for _ in 0..<200 {
            let (_, document) = try await call("GET", "/publish_api/v1/instances/\(Self.instanceID)/publishes/\(id)")
            if let document = document as? [String: Any], document["status"] as? String == "finished" { return document }
            try await Task.sleep(nanoseconds: 50_000_000)  // a real deadline: the engine finishes within milliseconds
        }
        throw PushClientTestError("publish \(id) did not finish")
    }
}

struct PushClientTestError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A value behind a lock (tests only).
final class Locked<Value>: @unchecked Sendable {
    // @unchecked: `value` is only touched while holding `lock`.
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    /// Sets a new value. - Returns: the old one.
    @discardableResult
    func set(_ new: Value) -> Value {
        lock.lock()
        defer { lock.unlock() }
        let old = value
        value = new
        return old
    }
    func get() -> Value {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
    func update<T>(_ body: (inout Value) -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}
