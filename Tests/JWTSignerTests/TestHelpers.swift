import Foundation
import JSON
import JWTSigner
import XCTest

/// Builds tokens with arbitrary headers and claims, for rejection tests that need a valid signature on a bad token.
enum TokenForge {
    static func hs256(header: String, claims: String, key: [UInt8]) throws -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let mac = try HS256.authenticationCode(Array(signingInput.utf8), key: key)
        return signingInput + "." + Base64URL.encode(mac)
    }

    static func es256(header: String, claims: String, key: ES256PrivateKey) throws -> String {
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        return signingInput + "." + Base64URL.encode(try key.sign(Array(signingInput.utf8)))
    }

    /// Decodes a token segment as a JSON object, for inspecting what we produced.
    static func object(_ token: String, segment: Int) throws -> [String: JSONValue] {
        let part = token.split(separator: ".", omittingEmptySubsequences: false)[segment]
        let value = try JSONValue(parsing: try Base64URL.decode(part))
        return try XCTUnwrap(value.objectValue)
    }
}

/// Asserts that `body` throws exactly `expected` (one overload per error type, so `.malformed(…)` resolves).
func XCTAssertThrowsError<T>(
    _ body: @autoclosure () throws -> T, equals expected: JWTError, file: StaticString = #filePath, line: UInt = #line
) {
    assertThrows(try body(), expected, file, line)
}

func XCTAssertThrowsError<T>(
    _ body: @autoclosure () throws -> T, equals expected: KeyLoadError, file: StaticString = #filePath, line: UInt = #line
) {
    assertThrows(try body(), expected, file, line)
}

func XCTAssertThrowsError<T>(
    _ body: @autoclosure () throws -> T, equals expected: Base64URLError, file: StaticString = #filePath, line: UInt = #line
) {
    assertThrows(try body(), expected, file, line)
}

private func assertThrows<T, E: Error & Equatable>(
    _ body: @autoclosure () throws -> T, _ expected: E, _ file: StaticString, _ line: UInt
) {
    do {
        let value = try body()
        XCTFail("expected \(expected), got \(value)", file: file, line: line)
    } catch let error as E {
        XCTAssertEqual(error, expected, file: file, line: line)
    } catch {
        XCTFail("expected \(expected), got \(type(of: error)) \(error)", file: file, line: line)
    }
}

/// The venv Python with `cryptography`, an implementation independent of ours.
enum TestPython {
    /// The package root, three levels above this file (`Tests/JWTSignerTests/TestHelpers.swift`).
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `PUSH_TEST_PYTHON` (set by `make test`), else `<package root>/.venv/bin/python3`.
    static var executable: String {
        if let path = ProcessInfo.processInfo.environment["PUSH_TEST_PYTHON"], !path.isEmpty { return path }
        return packageRoot.appendingPathComponent(".venv/bin/python3").path
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// Runs `script` (Python source) with `arguments`; returns stdout. A missing interpreter or a missing
    /// `cryptography` module is a test failure with instructions, never a skip: `make test` always provides both.
    static func run(_ script: String, _ arguments: [String]) throws -> String {
        let python = executable
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Failure(description: "No Python at \(python): run `make venv` (or `make test`), or set PUSH_TEST_PYTHON "
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: python)
        process.arguments = [scriptURL.path] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        if process.terminationStatus == 97 {
            throw Failure(description: "\(python) has no `cryptography` module: run `make venv` or point PUSH_TEST_PYTHON "
                + "at the venv's python3")
        }
        guard process.terminationStatus == 0 else {
            throw Failure(description: "python exited with \(process.terminationStatus): \(String(decoding: stderr, as: UTF8.self))")
        }
        return String(decoding: stdout, as: UTF8.self)
    }
}

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }

    init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        self = bytes
    }
}
