import Foundation
import Locking

/// Runs a tool (openssl, python, pg_ctl, …) to completion for a test: the one place tests start a short-lived
/// process and collect what it printed.
package enum ChildProcess {
    /// What the tool left behind.
    package struct Outcome: Sendable {
        package let status: Int32
        package let stdout: Data
        package let stderr: Data

        package var output: String { String(decoding: stdout, as: UTF8.self) }
        package var errors: String { String(decoding: stderr, as: UTF8.self) }
    }

    /// The tool could not be started, or (from `checked`) exited non-zero.
    package struct Failure: Error, CustomStringConvertible {
        package let status: Int32
        package let description: String
    }

    /// Runs `executable` with `arguments`, `input` (if any) on stdin, else stdin is `/dev/null`.
    ///
    /// stderr is read on its own thread while stdout is read here, so a tool that fills one pipe while the test
    /// waits on the other cannot deadlock; both are read to the end before waiting for the exit.
    package static func run(_ executable: String, _ arguments: [String], input: Data? = nil) throws(Failure) -> Outcome
    {
        if let refusal = TestTier.refusal(starting: executable) { throw Failure(status: -1, description: refusal) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let output = Pipe()
        let errors = Pipe()
        let stdin = input.map { _ in Pipe() }
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = stdin ?? FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw Failure(status: -1, description: "cannot run \(executable): \(error)")
        }
        let errorData = Locked(Data())
        let errorsRead = DispatchSemaphore(value: 0)
        let errorHandle = errors.fileHandleForReading
        Thread {
            let data = errorHandle.readDataToEndOfFile()
            errorData.withLock { $0 = data }
            errorsRead.signal()
        }.start()
        if let stdin, let input {
            // Written from another thread too: an input larger than a pipe's buffer must not block the reads.
            let writer = stdin.fileHandleForWriting
            Thread {
                writer.write(input)
                try? writer.close()
            }.start()
        }
        let outputData = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        errorsRead.wait()
        return Outcome(status: process.terminationStatus, stdout: outputData, stderr: errorData.withLock { $0 })
    }

    /// `run`, then a `Failure` carrying stderr when the tool exits non-zero. - Returns: stdout as text.
    @discardableResult
    package static func checked(_ executable: String, _ arguments: [String], input: Data? = nil) throws(Failure)
        -> String
    {
        let outcome = try run(executable, arguments, input: input)
        guard outcome.status == 0 else {
            throw Failure(
                status: outcome.status,
                description: "\(executable) \(arguments.joined(separator: " ")) exited "
                    + "with \(outcome.status): \(outcome.errors)")
        }
        return outcome.output
    }
}
