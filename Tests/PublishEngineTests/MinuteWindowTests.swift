import PublishEngine
import XCTest

/// The last minute's count behind a provider budget's usage in the console: events of the 60 seconds up to now,
/// older ones forgotten, a reused bucket restarted.
final class MinuteWindowTests: XCTestCase {
    func testCountsTheLastSixtySecondsAndForgetsOlderEvents() {
        var window = MinuteWindow()
        window.add(at: 1000)
        window.add(2, at: 1030)
        window.add(at: 1059)
        XCTAssertEqual(window.total(at: 1059), 4)
        XCTAssertEqual(window.total(at: 1060), 3, "second 1000 is 60 s old")
        XCTAssertEqual(window.total(at: 1089), 3)
        XCTAssertEqual(window.total(at: 1090), 1)
        XCTAssertEqual(window.total(at: 1200), 0)
        // Second 1060 reuses the bucket of second 1000: it starts from zero.
        window.add(at: 1060)
        XCTAssertEqual(window.total(at: 1060), 4)
        XCTAssertEqual(window.total(at: 999), 0, "nothing counted is in the future of the question")
    }
}
