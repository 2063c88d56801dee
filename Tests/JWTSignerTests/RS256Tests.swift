import Foundation
import JSON
import JWTSigner
import TestSupport
import XCTest

final class RS256Tests: XCTestCase {
    func testSignatureIsModulusSizedAndVerifiesWithMatchingPublicKey() throws {
        let pair = try TestKeys.makeRSA(bits: 2048)
        defer { TestKeys.remove(pair) }
        let key = try RS256PrivateKey(pem: pair.privateKeyPEM)
        let publicKey = try RS256PublicKey(pem: pair.publicKeyPEM)
        XCTAssertEqual(key.publicKey, publicKey)
        XCTAssertEqual(key.bits, 2048)
        let message = Array("assertion".utf8)
        let signature = try key.sign(message)
        XCTAssertEqual(signature.count, 256)
        XCTAssertTrue(publicKey.verify(signature: signature, message: message))
    }

    func testSignatureEqualsOpenSSLCommandLinePKCS1v15Signature() throws {
        // PKCS#1 v1.5 is deterministic: the CLI's `dgst -sha256 -sign` must produce the very same bytes.
        let pair = try TestKeys.makeRSA(bits: 2048)
        defer { TestKeys.remove(pair) }
        let message = Array("header.claims".utf8)
        let messagePath = pair.directory + "/message.bin"
        try Data(message).write(to: URL(fileURLWithPath: messagePath))
        let expected = try TestKeys.runOpenSSL(["dgst", "-sha256", "-sign", pair.privateKeyPath, messagePath])
        XCTAssertEqual(try RS256PrivateKey(pem: pair.privateKeyPEM).sign(message), Array(expected))
    }

    func testOpenSSLCommandLineVerifiesOurSignatureAndRejectsOtherMessage() throws {
        let pair = try TestKeys.makeRSA(bits: 3072)
        defer { TestKeys.remove(pair) }
        let key = try RS256PrivateKey(contentsOfFile: pair.privateKeyPath)
        let message = Array("service account assertion".utf8)
        let signature = try key.sign(message)
        XCTAssertEqual(try TestKeys.openSSLVerify(signature, over: message, with: pair), "Verified OK\n")
        XCTAssertThrowsError(try TestKeys.openSSLVerify(signature, over: message + [0], with: pair))
    }

    func testPythonCryptographyVerifiesOurJWSAndItsSignaturesVerifyHere() throws {
        let pair = try TestKeys.makeRSA(bits: 2048)
        defer { TestKeys.remove(pair) }
        let key = try RS256PrivateKey(pem: pair.privateKeyPEM)
        let token = try JWS.rs256(
            header: [("alg", "RS256"), ("typ", "JWT")], claims: [("iss", "a@b"), ("iat", 1)], key: key)
        let script = """
            import base64
            from cryptography.exceptions import InvalidSignature
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import padding
            def b64(s): return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
            public_key = serialization.load_pem_public_key(open(sys.argv[1], "rb").read())
            private_key = serialization.load_pem_private_key(open(sys.argv[2], "rb").read(), password=None)
            header, claims, signature = sys.argv[3].split(".")
            public_key.verify(b64(signature), (header + "." + claims).encode(), padding.PKCS1v15(), hashes.SHA256())
            try:
                public_key.verify(b64(signature), (header + "." + claims + "x").encode(), padding.PKCS1v15(), hashes.SHA256())
                print("tampered verified")
            except InvalidSignature:
                pass
            print(b64(header).decode(), b64(claims).decode())
            for index in range(20):
                message = b"python %d" % index
                print(message.hex(), private_key.sign(message, padding.PKCS1v15(), hashes.SHA256()).hex())
            """
        let output = try TestPython.run(script, [pair.publicKeyPath, pair.privateKeyPath, token])
        var lines = output.split(separator: "\n")
        XCTAssertEqual(lines.removeFirst(), #"{"alg":"RS256","typ":"JWT"} {"iss":"a@b","iat":1}"#)
        XCTAssertEqual(lines.count, 20)
        for line in lines {
            let parts = line.split(separator: " ")
            let message = try XCTUnwrap([UInt8](hex: parts[0]))
            let signature = try XCTUnwrap([UInt8](hex: parts[1]))
            XCTAssertTrue(key.publicKey.verify(signature: signature, message: message))
            XCTAssertFalse(key.publicKey.verify(signature: signature, message: message + [1]))
        }
    }

    func testVerifyRejectsTamperedSignatureWrongLengthAndOtherKey() throws {
        let pair = try TestKeys.makeRSA(bits: 2048)
        let other = try TestKeys.makeRSA(bits: 2048)
        defer { TestKeys.remove(pair); TestKeys.remove(other) }
        let key = try RS256PrivateKey(pem: pair.privateKeyPEM)
        let message = Array("hello".utf8)
        let signature = try key.sign(message)
        var flipped = signature
        flipped[100] ^= 0x01
        XCTAssertFalse(key.publicKey.verify(signature: flipped, message: message))
        XCTAssertFalse(key.publicKey.verify(signature: Array(signature.dropLast()), message: message))
        XCTAssertFalse(key.publicKey.verify(signature: signature + [0], message: message))
        XCTAssertFalse(key.publicKey.verify(signature: [], message: message))
        XCTAssertFalse(key.publicKey.verify(signature: [UInt8](repeating: 0xFF, count: 256), message: message))
        XCTAssertFalse(try RS256PublicKey(pem: other.publicKeyPEM).verify(signature: signature, message: message))
        XCTAssertTrue(key.publicKey.verify(signature: signature, message: message))
    }

    func testLoadsPKCS1PrivateKeyAndSPKIDER() throws {
        let pair = try TestKeys.makeRSA(bits: 2048)
        defer { TestKeys.remove(pair) }
        let pkcs1Path = pair.directory + "/pkcs1.pem"
        try TestKeys.runOpenSSL(["rsa", "-in", pair.privateKeyPath, "-traditional", "-out", pkcs1Path])
        let pkcs1 = try String(contentsOfFile: pkcs1Path, encoding: .utf8)
        XCTAssertTrue(pkcs1.hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        let key = try RS256PrivateKey(pem: pkcs1)
        XCTAssertEqual(key.publicKey, try RS256PublicKey(pem: pair.publicKeyPEM))
        XCTAssertEqual(try RS256PublicKey(spkiDER: try key.publicKey.spkiDER()), key.publicKey)
    }

    func testRejectsECKeysShortRSAKeysEncryptedAndNonPEM() throws {
        let ec = try TestKeys.makeP256()
        let short = try TestKeys.makeRSA(bits: 1024)
        defer { TestKeys.remove(ec); TestKeys.remove(short) }
        XCTAssertThrowsError(try RS256PrivateKey(pem: ec.privateKeyPEM), equals: .unsuitableRSAKey(found: "EC P-256"))
        XCTAssertThrowsError(try RS256PublicKey(pem: ec.publicKeyPEM), equals: .unsuitableRSAKey(found: "EC P-256"))
        XCTAssertThrowsError(
            try RS256PrivateKey(pem: short.privateKeyPEM), equals: .unsuitableRSAKey(found: "RSA 1024-bit"))
        XCTAssertThrowsError(
            try RS256PublicKey(pem: short.publicKeyPEM), equals: .unsuitableRSAKey(found: "RSA 1024-bit"))
        XCTAssertThrowsError(try RS256PrivateKey(pem: "not a key"), equals: .notPEM)
        XCTAssertThrowsError(try RS256PublicKey(spkiDER: [0x30, 0x03, 0x02, 0x01, 0x00]))
        let encryptedPath = short.directory + "/encrypted.pem"
        let rsa = try TestKeys.makeRSA(bits: 2048)
        defer { TestKeys.remove(rsa) }
        try TestKeys.runOpenSSL([
            "pkcs8", "-topk8", "-in", rsa.privateKeyPath, "-out", encryptedPath, "-passout", "pass:x",
        ])
        XCTAssertThrowsError(
            try RS256PrivateKey(pem: try String(contentsOfFile: encryptedPath, encoding: .utf8)),
            equals: .encrypted)
        XCTAssertThrowsError(try RS256PrivateKey(contentsOfFile: short.directory + "/missing.pem"))
    }

    func testDescriptionNeverShowsKeyMaterial() throws {
        let pair = try TestKeys.makeRSA(bits: 2048)
        defer { TestKeys.remove(pair) }
        let key = try RS256PrivateKey(pem: pair.privateKeyPEM)
        XCTAssertEqual("\(key)", "RS256PrivateKey(RSA 2048-bit)")
        XCTAssertEqual("\(key.publicKey)", "RS256PublicKey(RSA 2048-bit)")
    }
}
