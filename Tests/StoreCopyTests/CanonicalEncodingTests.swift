import Foundation
import StoreCopy
import XCTest

/// The canonical row encoding and the table checksum built on it: equal rows give equal digests on either backend,
/// and rows that differ in any way (value, type, NULL, how bytes split between columns, order) do not.
final class CanonicalEncodingTests: XCTestCase {
    private func bytes(_ values: [PortableValue]) -> [UInt8] {
        var output: [UInt8] = []
        for value in values { value.encode(into: &output) }
        return output
    }

    private func digest(_ rows: [[PortableValue]]) -> String {
        let checksum = TableChecksum()
        for row in rows { checksum.add(row) }
        return checksum.finish()
    }

    func testIntegersAreEightBytesBigEndianAfterTheirTag() {
        XCTAssertEqual(bytes([.integer(1)]), [1, 0, 0, 0, 0, 0, 0, 0, 1])
        XCTAssertEqual(bytes([.integer(-1)]), [1] + [UInt8](repeating: 0xFF, count: 8))
        XCTAssertEqual(bytes([.integer(0x0102_0304_0506_0708)]), [1, 1, 2, 3, 4, 5, 6, 7, 8])
    }

    func testTextIsLengthPrefixedUTF8() {
        XCTAssertEqual(bytes([.text("é")]), [2, 0, 0, 0, 2, 0xC3, 0xA9])
        XCTAssertEqual(bytes([.text("")]), [2, 0, 0, 0, 0])
    }

    func testValuesThatLookAlikeEncodeDifferently() {
        let lookalikes: [[PortableValue]] = [
            [.null], [.text("")], [.bytes(Data())], [.integer(0)], [.boolean(false)], [.textList([])],
            [.text("1")], [.integer(1)], [.boolean(true)], [.bytes(Data("1".utf8))], [.textList(["1"])],
            [.text("ab"), .text("c")], [.text("a"), .text("bc")], [.textList(["ab", "c"])], [.textList(["a", "bc"])],
        ]
        let encodings = lookalikes.map(bytes)
        XCTAssertEqual(Set(encodings.map { Data($0) }).count, lookalikes.count, "two different rows encoded alike")
    }

    func testAnEmptyTableIsTheSHA256OfNothing() {
        let checksum = TableChecksum()
        XCTAssertEqual(checksum.finish(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(checksum.rows, 0)
    }

    func testTheDigestDependsOnEveryValueAndOnRowOrder() {
        let rows: [[PortableValue]] = [[.integer(1), .text("a")], [.integer(2), .text("b")]]
        let base = digest(rows)
        XCTAssertEqual(base, digest(rows), "the same rows must give the same digest")
        XCTAssertNotEqual(base, digest(Array(rows.reversed())))
        XCTAssertNotEqual(base, digest([[.integer(1), .text("a")], [.integer(2), .text("c")]]))
        XCTAssertNotEqual(base, digest([[.integer(1), .text("a")], [.integer(2), .null]]))
        XCTAssertNotEqual(base, digest([[.integer(1), .text("a")]]))
    }

    func testRowsLargerThanTheBufferHashLikeTheSameBytesInSmallRows() {
        // 70,000 rows cross the 64 KiB flush several times; the digest must not depend on where flushes fall.
        let many = (0..<70_000).map { [PortableValue.integer(Int64($0)), .text(String($0))] }
        let checksum = TableChecksum()
        for row in many { checksum.add(row) }
        XCTAssertEqual(checksum.rows, 70_000)
        let single = TableChecksum()
        single.add(many.flatMap { $0 })
        XCTAssertEqual(checksum.finish(), single.finish())
    }
}
