import Foundation
import JWTSigner
import TestSupport
import XCTest

final class ES256SignatureTests: XCTestCase {
    func testSignatureIs64BytesAndVerifiesWithMatchingPublicKey() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        let publicKey = try ES256PublicKey(pem: pair.publicKeyPEM)
        let message = Array("hello".utf8)
        let signature = try key.sign(message)
        XCTAssertEqual(signature.count, 64)
        XCTAssertTrue(publicKey.verify(signature: signature, message: message))
    }

    func testVerifyRejectsTamperedMessageSignatureAndOtherKey() throws {
        let pair = try TestKeys.makeP256()
        let other = try TestKeys.makeP256()
        defer { TestKeys.remove(pair); TestKeys.remove(other) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        let message = Array("hello".utf8)
        let signature = try key.sign(message)
        XCTAssertFalse(key.publicKey.verify(signature: signature, message: Array("hellp".utf8)))
        var flipped = signature
        flipped[40] ^= 0x01
        XCTAssertFalse(key.publicKey.verify(signature: flipped, message: message))
        XCTAssertFalse(try ES256PublicKey(pem: other.publicKeyPEM).verify(signature: signature, message: message))
        XCTAssertFalse(key.publicKey.verify(signature: Array(signature.dropLast()), message: message))
        XCTAssertFalse(key.publicKey.verify(signature: [UInt8](repeating: 0, count: 64), message: message))
    }

    func testDERAndRawFormsRoundTripIncludingShortRAndS() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        var shortComponents = 0
        for index in 0..<3_000 {
            let message = Array("message \(index)".utf8)
            let der = try key.signDER(message)
            let raw = try ES256Signature.raw(fromDER: der)
            if raw[0] == 0 || raw[32] == 0 { shortComponents += 1 }
            XCTAssertEqual(try ES256Signature.der(fromRaw: raw), der)
            XCTAssertTrue(key.publicKey.verify(derSignature: der, message: message))
        }
        // About 1 in 128 signatures has an R or S below 2^248: 3,000 without one has odds of about 1e-10.
        XCTAssertGreaterThan(shortComponents, 0, "no short R or S: the padding path was not exercised")
    }

    func testRawFromDERRejectsTrailingBytesAndGarbage() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let der = try ES256PrivateKey(pem: pair.privateKeyPEM).signDER([1, 2, 3])
        XCTAssertThrowsError(try ES256Signature.raw(fromDER: der + [0]))
        XCTAssertThrowsError(try ES256Signature.raw(fromDER: [0x30, 0x05]))
        XCTAssertThrowsError(try ES256Signature.raw(fromDER: []))
        XCTAssertThrowsError(try ES256Signature.der(fromRaw: [UInt8](repeating: 1, count: 63)))
    }

    func testOpenSSLCommandLineVerifiesOurDERSignature() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(contentsOfFile: pair.privateKeyPath)
        let message = Array("provider token signing input".utf8)
        let signature = try key.signDER(message)
        XCTAssertEqual(try TestKeys.openSSLVerify(signature, over: message, with: pair), "Verified OK\n")
        // The same command must fail for another message, or the check above proves nothing.
        XCTAssertThrowsError(try TestKeys.openSSLVerify(signature, over: message + [0], with: pair))
    }

    func testPythonCryptographyVerifies2000OfOurSignatures() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        var lines = ""
        var shortComponents = 0
        for index in 0..<2_000 {
            let message = Array("apns signing input \(index)".utf8)
            let signature = try key.sign(message)
            if signature[0] == 0 || signature[32] == 0 { shortComponents += 1 }
            lines += message.hex + " " + signature.hex + "\n"
        }
        let dataPath = pair.directory + "/signatures.txt"
        try lines.write(toFile: dataPath, atomically: true, encoding: .utf8)
        let script = """
            from cryptography.exceptions import InvalidSignature
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
            public_key = serialization.load_pem_public_key(open(sys.argv[1], "rb").read())
            verified = failed = tampered_rejected = 0
            for line in open(sys.argv[2]):
                message_hex, signature_hex = line.split()
                message, raw = bytes.fromhex(message_hex), bytes.fromhex(signature_hex)
                der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
                try:
                    public_key.verify(der, message, ec.ECDSA(hashes.SHA256()))
                    verified += 1
                except InvalidSignature:
                    failed += 1
                try:
                    public_key.verify(der, message + b"!", ec.ECDSA(hashes.SHA256()))
                except InvalidSignature:
                    tampered_rejected += 1
            print(verified, failed, tampered_rejected)
            """
        let output = try TestPython.run(script, [pair.publicKeyPath, dataPath])
        XCTAssertEqual(output, "2000 0 2000\n")
        XCTAssertGreaterThan(shortComponents, 0, "no short R or S among 2,000 signatures: padding path not exercised")
    }

    func testWeVerifySignaturesMadeByPythonCryptography() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let script = """
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
            private_key = serialization.load_pem_private_key(open(sys.argv[1], "rb").read(), password=None)
            for index in range(300):
                message = b"python message %d" % index
                r, s = decode_dss_signature(private_key.sign(message, ec.ECDSA(hashes.SHA256())))
                print(message.hex(), (r.to_bytes(32, "big") + s.to_bytes(32, "big")).hex())
            """
        let output = try TestPython.run(script, [pair.privateKeyPath])
        let publicKey = try ES256PublicKey(pem: pair.publicKeyPEM)
        var count = 0
        for line in output.split(separator: "\n") {
            let parts = line.split(separator: " ")
            let message = try XCTUnwrap([UInt8](hex: parts[0]))
            let signature = try XCTUnwrap([UInt8](hex: parts[1]))
            XCTAssertTrue(
                publicKey.verify(signature: signature, message: message), "python signature \(count) rejected")
            XCTAssertFalse(publicKey.verify(signature: signature, message: message + [0]))
            count += 1
        }
        XCTAssertEqual(count, 300)
    }

    func testConcurrentSigningWithOneSharedKeyProducesValidSignatures() throws {
        let pair = try TestKeys.makeP256()
        defer { TestKeys.remove(pair) }
        let key = try ES256PrivateKey(pem: pair.privateKeyPEM)
        let failures = Counter()
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for index in 0..<100 {
                let message = Array("thread \(thread) message \(index)".utf8)
                guard let signature = try? key.sign(message),
                    key.publicKey.verify(signature: signature, message: message)
                else { failures.increment(); continue }
            }
        }
        XCTAssertEqual(failures.value, 0)
    }
}

/// A thread-safe counter for the concurrency test.
private final class Counter: @unchecked Sendable {
    // @unchecked: `count` is only touched while holding `lock`.
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
