@testable import APNsClient
import XCTest

/// The connection slot's request bookkeeping without sockets: what counts as answered, what is re-sent, and the
/// cold-connection gate.
final class APNsStreamLedgerTests: XCTestCase {
    func testTwoHundredIsAnsweredWhenItsHeadersCompleteAndCurlsLaterFailureIsIgnored() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertTrue(ledger.headersComplete(1, status: 200))
        XCTAssertFalse(ledger.headersComplete(1, status: 200), "answered once")
        // The connection is reset before curl ends the transfer: it reports a receive error.
        XCTAssertEqual(ledger.ended(1, .failed(.connection, status: 200)), .alreadySettled)
        XCTAssertEqual(ledger.inFlight, 0)
    }

    func testTwoHundredThatCurlEndsNormallyIsSettledOnce() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertTrue(ledger.headersComplete(1, status: 200))
        XCTAssertEqual(ledger.ended(1, .completed(status: 200, tokenRejected: false)), .alreadySettled)
    }

    func testTwoHundredStatusBeforeAConnectionResetCountsAsAnsweredNotResent() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertEqual(ledger.ended(1, .failed(.connection, status: 200)), .answered(status: 200))
        XCTAssertEqual(ledger.ended(2, .failed(.timeout, status: 200)), .answered(status: 200))
    }

    func testErrorAnswerIsSettledOnlyWhenCurlEndsTheTransfer() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertFalse(ledger.headersComplete(1, status: 410), "the reason is in the body, still to come")
        XCTAssertEqual(ledger.ended(1, .completed(status: 410, tokenRejected: false)), .answered(status: 410))
    }

    func testErrorAnswerCutOffByTheConnectionIsResent() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertEqual(ledger.ended(1, .failed(.timeout, status: 503)), .unanswered(.connection))
        ledger.started(2)
        XCTAssertEqual(ledger.ended(2, .failed(.fatal, status: 400)), .unanswered(.fatal))
    }

    func testTransferWithoutAnswerEndsAsItsFailure() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertEqual(ledger.ended(1, .failed(.connection, status: 0)), .unanswered(.connection))
        ledger.started(2)
        XCTAssertEqual(ledger.ended(2, .failed(.timeout, status: 0)), .unanswered(.timeout))
    }

    func testColdConnectionTakesOneProbeUntilTheFirstAnswer() {
        var ledger = APNsStreamLedger()
        XCTAssertTrue(ledger.mayStart)
        ledger.started(1)
        XCTAssertFalse(ledger.mayStart, "one stream until APNs accepted the token")
        XCTAssertTrue(ledger.headersComplete(1, status: 200))
        XCTAssertTrue(ledger.warm)
        XCTAssertTrue(ledger.mayStart)
        ledger.started(2)
        ledger.started(3)
        XCTAssertTrue(ledger.mayStart)
    }

    func testFailedProbeLetsTheNextProbeStart() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertEqual(ledger.ended(1, .failed(.connection, status: 0)), .unanswered(.connection))
        XCTAssertFalse(ledger.warm)
        XCTAssertTrue(ledger.mayStart)
    }

    func testStreamsOfTheDeadConnectionNeverHoldBackTheProbe() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        _ = ledger.headersComplete(1, status: 200)
        for id in 2...5 { ledger.started(id) }
        // The connection is reset: curl reports one transfer now, the others later (or only at their timeout).
        XCTAssertEqual(ledger.ended(2, .failed(.connection, status: 0)), .unanswered(.connection))
        XCTAssertFalse(ledger.warm)
        XCTAssertTrue(ledger.mayStart, "streams 3-5 are not probes")
        ledger.started(6)
        XCTAssertFalse(ledger.mayStart)
        XCTAssertEqual(ledger.inFlight, 5)
    }

    func testTokenRejectionKeepsTheConnectionCold() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertEqual(ledger.ended(1, .completed(status: 403, tokenRejected: true)), .answered(status: 403))
        XCTAssertFalse(ledger.warm)
        ledger.started(2)
        XCTAssertEqual(ledger.ended(2, .completed(status: 400, tokenRejected: false)), .answered(status: 400))
        XCTAssertTrue(ledger.warm)
    }

    func testIdleConnectionGoesColdAgain() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        _ = ledger.headersComplete(1, status: 200)
        _ = ledger.ended(1, .completed(status: 200, tokenRejected: false))
        ledger.goCold()
        ledger.started(2)
        XCTAssertFalse(ledger.mayStart)
    }
}
