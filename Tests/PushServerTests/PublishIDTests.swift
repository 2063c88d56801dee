import Foundation
import XCTest

@testable import PushServer

/// The publish id `PublishAPI` hands out: `pubid-` and a random (version 4) UUID in lower case, as it was with
/// Foundation's `UUID()`.
final class PublishIDTests: XCTestCase {
    func testAPublishIDIsPubidAndALowerCaseVersion4UUID() throws {
        let id = PublishAPI.newPublishID()
        XCTAssertTrue(id.hasPrefix("pubid-"), id)
        let text = String(id.dropFirst("pubid-".count))
        XCTAssertEqual(text, text.lowercased())
        let uuid = try XCTUnwrap(UUID(uuidString: text), text)
        XCTAssertEqual(uuid.uuid.6 >> 4, 4, "version nibble")
        XCTAssertEqual(uuid.uuid.8 & 0xC0, 0x80, "RFC 9562 variant")
    }

    func testPublishIDsDifferFromOneCallToTheNext() {
        let ids = Set((0..<1000).map { _ in PublishAPI.newPublishID() })
        XCTAssertEqual(ids.count, 1000)
    }
}
