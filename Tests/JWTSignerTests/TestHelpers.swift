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
    _ body: @autoclosure () throws -> T, equals expected: KeyLoadError, file: StaticString = #filePath,
    line: UInt = #line
) {
    assertThrows(try body(), expected, file, line)
}

func XCTAssertThrowsError<T>(
    _ body: @autoclosure () throws -> T, equals expected: Base64URLError, file: StaticString = #filePath,
    line: UInt = #line
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

extension Array where Element == UInt8 {
    var hex: String { map { String(format: "%02x", $0) }.joined() }

    init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        self = bytes
    }
}
