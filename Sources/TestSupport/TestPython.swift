import Foundation

/// The venv Python with `cryptography`, an implementation independent of ours.
package enum TestPython {
    /// The package root, three levels above this file (`Sources/TestSupport/TestPython.swift`).
    package static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `PUSH_TEST_PYTHON` (set by `make test`), else `<package root>/.venv/bin/python3`.
    package static var executable: String {
        if let path = ProcessInfo.processInfo.environment["PUSH_TEST_PYTHON"], !path.isEmpty { return path }
        return packageRoot.appendingPathComponent(".venv/bin/python3").path
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// Runs `script` (Python source) with `arguments`; returns stdout. A missing interpreter or a missing
    /// `cryptography` module is a test failure with instructions, never a skip: `make test` always provides both.
    package static func run(_ script: String, _ arguments: [String]) throws -> String {
        let python = executable
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Failure(
                description: "No Python at \(python): run `make venv` (or `make test`), or set PUSH_TEST_PYTHON "
                    + "to a Python with the `cryptography` package")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pytest-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let scriptURL = directory.appendingPathComponent("check.py")
        let prelude = """
            import sys
            try:
                import cryptography
            except ImportError:
                print("the cryptography package is not installed", file=sys.stderr)
                sys.exit(97)

            """
        try (prelude + script).write(to: scriptURL, atomically: true, encoding: .utf8)
        let outcome = try ChildProcess.run(python, [scriptURL.path] + arguments)
        if outcome.status == 97 {
            throw Failure(
                description: "\(python) has no `cryptography` module: run `make venv` or point PUSH_TEST_PYTHON "
                    + "at the venv's python3")
        }
        guard outcome.status == 0 else {
            throw Failure(description: "python exited with \(outcome.status): \(outcome.errors)")
        }
        return outcome.output
    }
}
