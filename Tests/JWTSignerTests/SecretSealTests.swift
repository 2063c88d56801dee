import JWTSigner
import XCTest

final class SecretSealTests: XCTestCase {
    func testSHA256MatchesTheKnownDigestOfABC() throws {
        // FIPS 180-2, appendix B.1.
        XCTAssertEqual(
            try SHA256.hex(Array("abc".utf8)),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func testSealedSecretOpensWithTheSameKeyAndAssociatedData() throws {
        let seal = try SecretSeal(deriving: "operator key-encryption key, long and random")
        let secret = Array("the instance's Beams secret".utf8)
        let sealed = try seal.seal(secret, associatedData: Array("row 1".utf8))
        XCTAssertEqual(sealed.count, 12 + secret.count + 16)
        XCTAssertNil(sealed.firstRange(of: secret), "the plain text is not in the sealed bytes")
        XCTAssertEqual(try seal.open(sealed, associatedData: Array("row 1".utf8)), secret)
        XCTAssertNotEqual(try seal.seal(secret, associatedData: Array("row 1".utf8)), sealed, "a fresh nonce per seal")
    }

    func testSealedSecretDoesNotOpenWithAnotherKeyRowOrAlteredBytes() throws {
        let seal = try SecretSeal(deriving: "key one")
        let sealed = try seal.seal(Array("secret".utf8), associatedData: Array("row 1".utf8))
        XCTAssertThrowsError(try SecretSeal(deriving: "key two").open(sealed, associatedData: Array("row 1".utf8)))
        XCTAssertThrowsError(try seal.open(sealed, associatedData: Array("row 2".utf8)))
        var altered = sealed
        altered[14] ^= 1
        XCTAssertThrowsError(try seal.open(altered, associatedData: Array("row 1".utf8)))
        XCTAssertThrowsError(try seal.open(Array(sealed.prefix(20)), associatedData: Array("row 1".utf8)))
    }

    func testSealRefusesAKeyThatIsNot32Bytes() {
        XCTAssertThrowsError(try SecretSeal(key: [UInt8](repeating: 1, count: 16)))
    }
}
