import Foundation
import JSON

/// A client CA and APNs-shaped client certificates for certificate-authentication tests, made by
/// `Tests/Support/apns_certificates.py` (the same helper the end-to-end tests import) in a fresh directory.
///
/// Paths: `ca` (the client CA for `mock_apns.py --client-ca`), `cert`/`key` (valid, topics com.example.app, .voip
/// and .complication), `p12` (the same, password `password`), `legacy_p12` (RC2-40), `single_cert`/`single_key`
/// (UID com.example.single, no topics extension, development only), `expired_cert`/`expired_key`/`expired_p12`,
/// `future_cert`/`future_key` (not yet valid), `soon_p12` (10 days left), `other_key` (another certificate's key),
/// `encrypted_cert`/`encrypted_key` (key password `key_password`), `production_cert`/`production_key` (production
/// marker only; `single_*` has the sandbox one only), `unmarked_cert`/`unmarked_key` (no environment marker).
package struct APNsTestCertificates: Sendable {
    package let directory: String
    package let paths: [String: String]

    /// Makes a set (a few seconds: RSA keys) with the venv Python.
    package static func make() throws -> APNsTestCertificates {
        let directory = try TestKeys.makeTemporaryDirectory()
        let support = TestPython.packageRoot.appendingPathComponent("Tests/Support").path
        let output = try TestPython.run(
            """
            import json
            sys.path.insert(0, sys.argv[1])
            import apns_certificates
            print(json.dumps(apns_certificates.make_set(sys.argv[2])))
            """, [support, directory])
        guard let object = try JSONValue(parsing: Array(output.utf8)).objectValue else {
            throw TestPython.Failure(description: "apns_certificates.make_set printed no JSON object: \(output)")
        }
        var paths: [String: String] = [:]
        for (name, value) in object { if let text = value.stringValue { paths[name] = text } }
        return APNsTestCertificates(directory: directory, paths: paths)
    }

    /// The path (or value) named `name`; an unknown name is a test bug and reads as a missing file.
    package subscript(_ name: String) -> String { paths[name] ?? "/nonexistent/\(name)" }

    /// The bytes of the file named `name`.
    package func bytes(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: self[name])))
    }

    /// Deletes the directory.
    package func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }
}
