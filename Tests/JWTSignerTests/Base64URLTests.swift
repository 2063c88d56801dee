import JWTSigner
import XCTest

final class Base64URLTests: XCTestCase {
    func testEncodesRFC4648VectorsWithoutPadding() {
        let vectors = [
            "": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors {
            XCTAssertEqual(Base64URL.encode(plain), encoded)
            XCTAssertEqual(try Base64URL.decode(encoded), Array(plain.utf8))
        }
    }

    func testUsesURLSafeAlphabet() throws {
        XCTAssertEqual(Base64URL.encode([0xFB, 0xFF, 0xBF]), "-_-_")
        XCTAssertEqual(try Base64URL.decode("-_-_"), [0xFB, 0xFF, 0xBF])
    }

    func testRoundTripsEveryLengthAgainstFoundationBase64() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<200 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let encoded = Base64URL.encode(bytes)
            // Independent reference: Foundation's base64 with the alphabet swapped and padding stripped.
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(encoded, reference)
            XCTAssertEqual(try Base64URL.decode(encoded), bytes)
        }
    }

    func testRejectsStandardBase64Characters() {
        XCTAssertThrowsError(try Base64URL.decode("ab+c"), equals: .invalidCharacter(offset: 2))
        XCTAssertThrowsError(try Base64URL.decode("ab/c"), equals: .invalidCharacter(offset: 2))
    }

    func testRejectsPaddingAndWhitespace() {
        XCTAssertThrowsError(try Base64URL.decode("Zg=="), equals: .invalidCharacter(offset: 2))
        XCTAssertThrowsError(try Base64URL.decode("Zm9v\nYmFy"), equals: .invalidCharacter(offset: 4))
        XCTAssertThrowsError(try Base64URL.decode(" Zm9v"), equals: .invalidCharacter(offset: 0))
    }

    func testRejectsNonASCII() {
        XCTAssertThrowsError(try Base64URL.decode("Zm9é"), equals: .invalidCharacter(offset: 3))
    }

    func testRejectsImpossibleLengths() {
        XCTAssertThrowsError(try Base64URL.decode("A"), equals: .impossibleLength(1))
        XCTAssertThrowsError(try Base64URL.decode("AAAAA"), equals: .impossibleLength(5))
    }

    func testRejectsNonCanonicalFinalCharacter() {
        // "Zg" is "f"; "Zh" decodes to the same byte with a stray low bit set.
        XCTAssertThrowsError(try Base64URL.decode("Zh"), equals: .nonCanonicalEnding)
        XCTAssertThrowsError(try Base64URL.decode("Zm9"), equals: .nonCanonicalEnding)
    }
}
