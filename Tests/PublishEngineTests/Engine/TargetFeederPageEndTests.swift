import XCTest

@testable import PublishEngine

/// The feed's decision after a page was handed to the lanes. A stop that arrives once the last page is handed over
/// must not turn a delivered publish into one handed back (`EngineShutdownTests` met this under load).
final class TargetFeederPageEndTests: XCTestCase {
    func testAStopAfterTheLastPageWasHandedOverStillEndsTheFeedComplete() {
        XCTAssertEqual(TargetFeeder.PageEnd(isLast: true, mustStop: true), .fedAll)
    }

    func testTheLastPageWithoutAStopEndsTheFeedComplete() {
        XCTAssertEqual(TargetFeeder.PageEnd(isLast: true, mustStop: false), .fedAll)
    }

    func testAStopBeforeTheLastPageEndsTheFeedIncomplete() {
        XCTAssertEqual(TargetFeeder.PageEnd(isLast: false, mustStop: true), .stopped)
    }

    func testWithoutAStopTheFeedReadsTheNextPage() {
        XCTAssertEqual(TargetFeeder.PageEnd(isLast: false, mustStop: false), .nextPage)
    }
}
