import Foundation
import JSON
import Locking

/// A Python stand-in from `Tests/Support` run as a child process: launched with the test interpreter, its start-up
/// JSON line read (with a deadline), stopped with SIGTERM and EOF on its stdin (the stand-ins also exit when
/// this process dies, since they watch stdin), and its JSON control API called over plain HTTP/1.1.
/// `MockAPNs`, `MockFCM` and `MockPushService` are built on it.
package final class MockProcess: Sendable {
    /// The start-up line's members (`port`, `control_port`, `ca_file`, …).
    package let startup: [String: JSONValue]
    private let control: MockAPNsControlClient
    private struct Child {
        var process: Process?
        var stdinPipe: Pipe?
    }

    private let child: Locked<Child>

    /// Starts `Tests/Support/<script>` with `arguments` under `python` (default `MockAPNs.defaultPython`) and waits
    /// up to `startupTimeout` seconds for its line. stderr is inherited: a Python traceback shows up in the test log.
    package init(script: String, arguments: [String], python: String? = nil, startupTimeout: Double = 20)
        throws(MockAPNsError)
    {
        let path = MockAPNs.packageRoot.appendingPathComponent("Tests/Support/\(script)").path
        let python = python ?? MockAPNs.defaultPython
        if let refusal = TestTier.refusal(starting: script) { throw .launchFailed(refusal) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [path] + arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        do {
            try process.run()
        } catch {
            throw .launchFailed("\(python): \(error) (run `make venv` or set PUSH_TEST_PYTHON)")
        }
        let line: String
        do {
            line = try Self.readLine(from: stdout.fileHandleForReading.fileDescriptor, timeout: startupTimeout)
        } catch {
            process.terminate()
            process.waitUntilExit()
            throw error
        }
        guard let members = JSONValue.parse(Array(line.utf8))?.objectValue,
            let controlPort = members["control_port"]?.intValue,
            (1...65_535).contains(controlPort)
        else {
            process.terminate()
            process.waitUntilExit()
            throw .noStartupLine("unexpected line: \(line)")
        }
        startup = members
        control = MockAPNsControlClient(port: UInt16(controlPort))
        child = Locked(Child(process: process, stdinPipe: stdin))
    }

    deinit { stop() }

    /// A string member of the start-up line, or "" when missing.
    package func string(_ name: String) -> String { startup[name]?.stringValue ?? "" }

    /// Whether the child process is still running.
    package var isRunning: Bool {
        child.withLock { $0.process?.isRunning ?? false }
    }

    /// Calls the control API; returns the body of a 2xx as sent.
    package func callRaw(_ method: String, _ path: String, body: JSONValue? = nil) throws(MockAPNsError) -> Data {
        guard isRunning else { throw .stopped }
        return try control.call(method, path, body: body.map { Data($0.serialized()) })
    }

    /// Calls the control API; returns the parsed answer of a 2xx.
    package func call(_ method: String, _ path: String, body: JSONValue? = nil) throws(MockAPNsError) -> JSONValue {
        let data = try callRaw(method, path, body: body)
        if data.isEmpty { return .null }
        do {
            return try JSONValue(parsing: data, limits: JSONLimits(maxBytes: 1 << 28))
        } catch {
            throw .decoding(request: "\(method) \(path)", detail: "\(error)")
        }
    }

    /// Stops the child and waits for it to exit. Safe to call twice.
    package func stop() {
        let (process, stdinPipe) = child.withLock { child in
            defer { child = Child() }
            return (child.process, child.stdinPipe)
        }
        guard let process else { return }
        try? stdinPipe?.fileHandleForWriting.close()
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
    }

    private static func readLine(from fd: Int32, timeout: Double) throws(MockAPNsError) -> String {
        var bytes: [UInt8] = []
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw .noStartupLine("no start-up line within \(timeout) s") }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(left * 1000))
            if ready < 0 && errno == EINTR { continue }
            guard ready > 0 else { continue }
            var byte: UInt8 = 0
            let n = read(fd, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            guard n == 1 else {
                throw .noStartupLine(
                    "the mock exited before listening (output: \(String(decoding: bytes, as: UTF8.self)))")
            }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }
}
