import Foundation
import JWTSigner
import TestSupport
import WebPush
import XCTest

/// Decodes a base64url test constant (a test failure, never a trap, when it is wrong).
func b64(_ text: String, file: StaticString = #filePath, line: UInt = #line) -> [UInt8] {
    do {
        return try Base64URL.decode(text)
    } catch {
        XCTFail("bad test constant \(text): \(error)", file: file, line: line)
        return []
    }
}

/// Runs `Tests/Support/webpush_decrypt.py` (http_ece and `cryptography`, independent of the Swift code) with the
/// interpreter `PUSH_TEST_PYTHON` names (else the package's .venv).
enum ReferenceWebPush {
    struct Failure: Error, CustomStringConvertible {
        let status: Int32
        let description: String
    }

    static var script: String {
        MockAPNs.packageRoot.appendingPathComponent("Tests/Support/webpush_decrypt.py").path
    }

    /// `["--auth", value]` as `["--auth=value"]`: a base64url value may begin with `-`, which argparse would take
    /// for an option (every option of the script takes a value).
    static func joinedOptions(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var i = 0
        while i < arguments.count {
            if arguments[i].hasPrefix("--"), i + 1 < arguments.count {
                out.append("\(arguments[i])=\(arguments[i + 1])")
                i += 2
            } else {
                out.append(arguments[i])
                i += 1
            }
        }
        return out
    }

    /// Runs the script with `arguments`, `input` on stdin; returns the parsed JSON it prints.
    static func run(_ arguments: [String], input: String) throws -> [String: Any] {
        let python = MockAPNs.defaultPython
        guard FileManager.default.isExecutableFile(atPath: python) else {
            throw Failure(status: -1, description: "no Python at \(python): run `make venv` or set PUSH_TEST_PYTHON")
        }
        let outcome = try ChildProcess.run(python, [script] + joinedOptions(arguments), input: Data(input.utf8))
        guard outcome.status == 0 else { throw Failure(status: outcome.status, description: outcome.errors) }
        let output = outcome.stdout
        guard let object = try JSONSerialization.jsonObject(with: output) as? [String: Any] else {
            throw Failure(status: 0, description: "not a JSON object: \(String(decoding: output, as: UTF8.self))")
        }
        return object
    }

    /// Decrypts `body` for the subscriber whose private key is `subscriber`; returns the plaintext.
    static func decrypt(_ body: [UInt8], subscriber: P256KeyPair, auth: [UInt8]) throws -> (
        plaintext: [UInt8], info: [String: Any]
    ) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("webpush-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keyFile = directory.appendingPathComponent("subscriber.pem")
        try subscriber.pkcs8PEM().write(to: keyFile, atomically: true, encoding: .utf8)
        let info = try run(
            ["decrypt", "--private-key", keyFile.path, "--auth", Base64URL.encode(auth)],
            input: Base64URL.encode(body))
        let plaintext = try Base64URL.decode(info["plaintext"] as? String ?? "?")
        return (plaintext, info)
    }
}

/// A fresh browser-like subscription: its private key, auth secret and the validated subscription.
struct TestSubscriber {
    let key: P256KeyPair
    let auth: [UInt8]
    let subscription: WebPushSubscription

    init(endpoint: String = "https://push.example.net/wpush/v2/abc") throws {
        key = try P256KeyPair.generate()
        auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        subscription = try WebPushSubscription(
            endpoint: endpoint, p256dh: Base64URL.encode(key.publicPoint),
            auth: Base64URL.encode(auth))
    }
}
