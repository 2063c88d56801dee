import Dispatch
import JWTSigner
import Locking
import WebPush
import XCTest

/// The per-message key agreement at the `EC_POINT` level (`P256Curve`) against RFC 8291 Appendix A and against the
/// EVP derivation the receiver makes.
final class P256CurveTests: XCTestCase {
    // RFC 8291 Appendix A.
    let asPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
    let asPublic = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
    let uaPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
    let uaPublic = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
    let ecdhSecret = "kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"

    func testTheVectorsScalarGivesTheVectorsSenderPointAndSecret() throws {
        let curve = try XCTUnwrap(P256Curve.shared)
        let agreement = try curve.agreement(with: curve.point(b64(uaPublic)), scalar: b64(asPrivate))
        XCTAssertEqual(agreement.publicPoint, b64(asPublic))
        XCTAssertEqual(agreement.sharedSecret, b64(ecdhSecret))
    }

    func testFreshAgreementsDifferAndTheReceiverDerivesTheSameSecretFromEach() throws {
        let curve = try XCTUnwrap(P256Curve.shared)
        let receiver = try P256KeyPair(privateScalar: b64(uaPrivate))
        let point = try curve.point(b64(uaPublic))
        let first = try curve.agreement(with: point)
        let second = try curve.agreement(with: point)
        XCTAssertNotEqual(first.publicPoint, second.publicPoint, "message key reused")
        XCTAssertNotEqual(first.sharedSecret, second.sharedSecret)
        for agreement in [first, second] {
            XCTAssertEqual(agreement.publicPoint.count, 65)
            XCTAssertEqual(agreement.publicPoint[0], 0x04)
            XCTAssertEqual(
                try receiver.sharedSecret(with: ES256PublicKey(uncompressedPoint: agreement.publicPoint)),
                agreement.sharedSecret)
        }
    }

    /// One subscriber point read by many threads at once (the encryption workers share a parsed subscription).
    func testConcurrentAgreementsWithOneSharedPointAreEachCorrectAndDistinct() throws {
        let curve = try XCTUnwrap(P256Curve.shared)
        let receiver = try P256KeyPair(privateScalar: b64(uaPrivate))
        let point = try curve.point(b64(uaPublic))
        let results = Locked<[(publicPoint: [UInt8], sharedSecret: [UInt8])]>([])
        let failures = Locked<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<25 {
                do {
                    let agreement = try curve.agreement(with: point)
                    results.withLock { $0.append(agreement) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let all = results.withLock { $0 }
        XCTAssertEqual(all.count, 200)
        XCTAssertEqual(Set(all.map(\.publicPoint)).count, 200, "a message key repeated")
        for agreement in all {
            XCTAssertEqual(
                try receiver.sharedSecret(with: ES256PublicKey(uncompressedPoint: agreement.publicPoint)),
                agreement.sharedSecret)
        }
    }

    func testRefusesAPointOffTheCurveAndScalarsOutsideTheGroup() throws {
        let curve = try XCTUnwrap(P256Curve.shared)
        var offCurve = b64(uaPublic)
        offCurve[64] ^= 0x01
        XCTAssertThrowsError(try curve.point(offCurve))
        XCTAssertThrowsError(try curve.point(Array(b64(uaPublic).dropLast())))
        var compressedPrefix = b64(uaPublic)
        compressedPrefix[0] = 0x02
        XCTAssertThrowsError(try curve.point(compressedPrefix))
        XCTAssertThrowsError(try WebPushSubscriberKeys(p256dh: offCurve, auth: [UInt8](repeating: 1, count: 16))) {
            XCTAssertEqual($0 as? WebPushSubscriptionError, .notOnCurve)
        }
        let point = try curve.point(b64(uaPublic))
        XCTAssertThrowsError(try curve.agreement(with: point, scalar: [UInt8](repeating: 0, count: 32)))
        // The group order n and above are not scalars of a key.
        XCTAssertThrowsError(try curve.agreement(with: point, scalar: [UInt8](repeating: 0xFF, count: 32)))
        XCTAssertThrowsError(try curve.agreement(with: point, scalar: [1, 2, 3]))
    }
}
