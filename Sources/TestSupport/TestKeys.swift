import Foundation

/// A throwaway key made with the `openssl` CLI: file paths plus the PEM texts.
package struct TestKeyPair: Sendable {
    /// The temporary directory holding both files (delete it with `TestKeys.remove(_:)`).
    package let directory: String
    /// The private key file (PKCS#8 `BEGIN PRIVATE KEY`, or `BEGIN ENCRYPTED PRIVATE KEY` for encrypted keys).
    package let privateKeyPath: String
    /// The public key file (SPKI `BEGIN PUBLIC KEY`).
    package let publicKeyPath: String
    package let privateKeyPEM: String
    package let publicKeyPEM: String
}

/// `openssl` failed: the command, its exit status and what it wrote to stderr.
package struct TestKeyError: Error, CustomStringConvertible {
    package let command: String
    package let status: Int32
    package let stderr: String
    package var description: String { "`\(command)` exited with \(status): \(stderr)" }
}

/// Generates keys for tests with the system `openssl` CLI, so the keys come from an implementation independent of
/// the code under test. Every call makes a fresh temporary directory.
package enum TestKeys {
    /// A P-256 key pair, the kind Apple issues as `.p8`.
    package static func makeP256() throws -> TestKeyPair {
        try makeEC(curve: "P-256")
    }

    /// An EC key pair on `curve` (`P-256`, `P-384`, `secp256k1`, … as `openssl genpkey` names them).
    package static func makeEC(curve: String) throws -> TestKeyPair {
        try make(["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve)"], name: "ec-\(curve)")
    }

    /// An RSA key pair, for tests that must refuse non-EC keys.
    package static func makeRSA(bits: Int = 2048) throws -> TestKeyPair {
        try make(["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(bits)"], name: "rsa-\(bits)")
    }

    /// A P-256 key whose private half is passphrase-protected PKCS#8 (`BEGIN ENCRYPTED PRIVATE KEY`).
    package static func makeEncryptedP256(passphrase: String = "test-passphrase") throws -> TestKeyPair {
        try make(
            ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-256-cbc", "-pass", "pass:\(passphrase)"],
            name: "ec-encrypted",
            passphrase: passphrase
        )
    }

    /// The SEC1 form (`BEGIN EC PRIVATE KEY`) of an EC key pair's private key, written next to it.
    package static func sec1PrivateKey(of pair: TestKeyPair) throws -> (path: String, pem: String) {
        let path = pair.directory + "/sec1.pem"
        try runOpenSSL(["ec", "-in", pair.privateKeyPath, "-out", path])
        return (path, try String(contentsOfFile: path, encoding: .utf8))
    }

    /// What `openssl dgst -sha256 -verify` prints ("Verified OK\n") when it accepts `signature` (DER for EC keys)
    /// over `message` under the pair's public key; both are written into the pair's directory first. Throws
    /// `TestKeyError` when it refuses them.
    package static func openSSLVerify(_ signature: [UInt8], over message: [UInt8], with pair: TestKeyPair) throws
        -> String
    {
        let messagePath = pair.directory + "/message.bin"
        let signaturePath = pair.directory + "/signature.bin"
        try Data(message).write(to: URL(fileURLWithPath: messagePath))
        try Data(signature).write(to: URL(fileURLWithPath: signaturePath))
        let output = try runOpenSSL([
            "dgst", "-sha256", "-verify", pair.publicKeyPath, "-signature", signaturePath, messagePath,
        ])
        return String(decoding: output, as: UTF8.self)
    }

    /// A fresh empty directory under the system temporary directory.
    package static func makeTemporaryDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory
            .appendingPathComponent("push-test-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// Deletes a key pair's directory.
    package static func remove(_ pair: TestKeyPair) {
        try? FileManager.default.removeItem(atPath: pair.directory)
    }

    /// Runs `openssl` with `arguments` and returns its standard output; throws `TestKeyError` on a non-zero exit.
    @discardableResult
    package static func runOpenSSL(_ arguments: [String], input: Data? = nil) throws -> Data {
        if let refusal = TestTier.refusal(starting: "openssl") {
            throw TestKeyError(command: "openssl", status: -1, stderr: refusal)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = input == nil ? FileHandle.nullDevice : Pipe()
        try process.run()
        if let input, let pipe = process.standardInput as? Pipe {
            pipe.fileHandleForWriting.write(input)
            try pipe.fileHandleForWriting.close()
        }
        // Outputs here are a few KiB, far below the pipe buffer, so reading one pipe after the other cannot stall.
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestKeyError(
                command: (["openssl"] + arguments).joined(separator: " "),
                status: process.terminationStatus,
                stderr: String(decoding: stderr, as: UTF8.self)
            )
        }
        return stdout
    }

    private static func make(_ generateOptions: [String], name: String, passphrase: String? = nil) throws -> TestKeyPair
    {
        let directory = try makeTemporaryDirectory()
        let privatePath = directory + "/\(name).p8"
        let publicPath = directory + "/\(name).pub.pem"
        try runOpenSSL(["genpkey"] + generateOptions + ["-out", privatePath])
        var publicArguments = ["pkey", "-in", privatePath, "-pubout", "-out", publicPath]
        if let passphrase { publicArguments += ["-passin", "pass:\(passphrase)"] }
        try runOpenSSL(publicArguments)
        return TestKeyPair(
            directory: directory,
            privateKeyPath: privatePath,
            publicKeyPath: publicPath,
            privateKeyPEM: try String(contentsOfFile: privatePath, encoding: .utf8),
            publicKeyPEM: try String(contentsOfFile: publicPath, encoding: .utf8)
        )
    }
}
