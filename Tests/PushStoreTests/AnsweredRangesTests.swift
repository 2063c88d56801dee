import StoreSQL
import XCTest

/// The encoding of a checkpoint's answered refs as ranges and their reading back, without a database: the ranges
/// hold exactly the refs above the cursor (and within a shard's last ref), each once.
final class AnsweredRangesTests: XCTestCase {
    private func pairs(_ ranges: AnsweredRanges) -> [[Int64]] {
        zip(ranges.firsts, ranges.lasts).map { [$0, $1] }
    }

    func testCollapsesUnsortedRefsWithHolesAndRepeatsIntoMaximalRuns() {
        let ranges = AnsweredRanges([9, 3, 4, 12, 5, 10, 4, 20, 11, 3], above: 0)
        XCTAssertEqual(pairs(ranges), [[3, 5], [9, 12], [20, 20]])
        XCTAssertEqual(ranges.count, 3)
        XCTAssertEqual(ranges.jsonPairs, "[[3,5],[9,12],[20,20]]")
    }

    func testLeavesOutRefsAtOrBelowTheCursorAndAboveTheShardsLastRef() {
        let ranges = AnsweredRanges(Array(1...30), above: 10, through: 20)
        XCTAssertEqual(pairs(ranges), [[11, 20]], "a shard's range stops at its last ref")
        XCTAssertTrue(AnsweredRanges([1, 2, 3], above: 3).isEmpty)
        XCTAssertEqual(AnsweredRanges([], above: 0).jsonPairs, "[]")
    }

    func testRefsAtTheEdgesOfInt64DoNotOverflow() {
        let ranges = AnsweredRanges([.max, .max - 1, .min, .max], above: .min)
        XCTAssertEqual(pairs(ranges), [[.max - 1, .max]])
        var refs = Set<Int64>()
        AnsweredRanges.insert(first: .max - 1, last: .max, above: .max, into: &refs)
        XCTAssertEqual(refs, [])
        AnsweredRanges.insert(first: .max - 1, last: .max, above: .max - 1, into: &refs)
        XCTAssertEqual(refs, [.max])
    }

    func testReadingARowKeepsOnlyItsRefsAboveTheCursorAndWithinTheShard() {
        var refs = Set<Int64>()
        AnsweredRanges.insert(first: 5, last: 9, above: 6, into: &refs)
        XCTAssertEqual(refs, [7, 8, 9], "the cursor stands inside the range")
        AnsweredRanges.insert(first: 12, last: 12, above: 6, into: &refs)
        AnsweredRanges.insert(first: 1, last: 4, above: 6, into: &refs)
        XCTAssertEqual(refs, [7, 8, 9, 12], "a range at or below the cursor adds nothing")
        AnsweredRanges.insert(first: 14, last: 30, above: 6, through: 16, into: &refs)
        XCTAssertEqual(refs, [7, 8, 9, 12, 14, 15, 16])
    }

    func testEncodedRangesReadBackAsExactlyTheRefsAboveTheCursor() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let cursor = Int64.random(in: 0..<50, using: &generator)
            let answered = (0..<Int.random(in: 0..<120, using: &generator)).map { _ in
                Int64.random(in: 0..<200, using: &generator)
            }
            let ranges = AnsweredRanges(answered, above: cursor)
            var read = Set<Int64>()
            for (first, last) in zip(ranges.firsts, ranges.lasts) {
                XCTAssertLessThanOrEqual(first, last)
                AnsweredRanges.insert(first: first, last: last, above: cursor, into: &read)
            }
            XCTAssertEqual(read, Set(answered.filter { $0 > cursor }))
            // Maximal: no two ranges touch, so the rows are as few as they can be.
            for (last, next) in zip(ranges.lasts, ranges.firsts.dropFirst()) {
                XCTAssertGreaterThan(next, last + 1)
            }
        }
    }
}
