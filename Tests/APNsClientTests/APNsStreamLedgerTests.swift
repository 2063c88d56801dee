import XCTest

@testable import APNsClient

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
        XCTAssertTrue(ledger.sending(2, connection: 1))
        XCTAssertEqual(ledger.ended(2, .failed(.timeout, status: 0)), .unanswered(.timeout), "sent: unknown")
    }

    func testRequestThatTimesOutBeforeCurlSentItIsResentAtOnce() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertEqual(ledger.diagnosis(of: 1).phase, .waitingForConnection)
        XCTAssertEqual(ledger.ended(1, .failed(.timeout, status: 0)), .unanswered(.connection), "never sent")
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
        XCTAssertTrue(ledger.sending(1, connection: 7))
        _ = ledger.headersComplete(1, status: 200)
        for id in 2...5 {
            ledger.started(id)
            XCTAssertTrue(ledger.sending(id, connection: 7))
        }
        // The connection is reset: curl reports one transfer now, the others later (or only at their timeout).
        XCTAssertEqual(ledger.ended(2, .failed(.connection, status: 0)), .unanswered(.connection))
        XCTAssertFalse(ledger.warm)
        XCTAssertTrue(ledger.mayStart, "streams 3-5 are on the dead connection")
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

    // MARK: - Connections (issue 24: APNs raises its one-stream limit only after the first answer)

    func testNewConnectionCarriesOneRequestAndHoldsTheRestBackUntilItAnswers() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertTrue(ledger.sending(1, connection: 7))
        _ = ledger.headersComplete(1, status: 200)
        ledger.started(2)
        XCTAssertTrue(ledger.sending(2, connection: 7))
        // GOAWAY (curl does not say): the next requests, started while warm, wait in curl for a new connection.
        for id in 3...6 { ledger.started(id) }
        XCTAssertTrue(ledger.sending(3, connection: 8), "the new connection's probe")
        XCTAssertFalse(ledger.warm)
        XCTAssertFalse(ledger.sending(4, connection: 8), "would be refused: held back unsent")
        XCTAssertFalse(ledger.sending(5, connection: 8))
        XCTAssertFalse(ledger.mayStart, "request 6 still waits for a connection, 3 is unanswered")
        XCTAssertEqual(ledger.ended(4, .failed(.fatal, status: 0)), .heldBack)
        XCTAssertTrue(ledger.headersComplete(2, status: 200), "the old connection drains ...")
        XCTAssertFalse(ledger.warm, "... which says nothing about the new one")
        XCTAssertTrue(ledger.headersComplete(3, status: 200))
        XCTAssertTrue(ledger.warm)
        XCTAssertTrue(ledger.sending(6, connection: 8))
        XCTAssertTrue(ledger.mayStart)
        XCTAssertEqual(ledger.ended(5, .failed(.fatal, status: 0)), .heldBack)
    }

    func testRequestCurlResendsOnAFreshConnectionAfterARefusalBecomesItsProbe() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        XCTAssertTrue(ledger.sending(1, connection: 7))
        _ = ledger.headersComplete(1, status: 200)
        ledger.started(2)
        ledger.started(3)
        XCTAssertTrue(ledger.sending(2, connection: 7))
        XCTAssertTrue(ledger.sending(3, connection: 7))
        // Both were above the GOAWAY's last-stream-id: curl sends them again by itself on a new connection.
        XCTAssertTrue(ledger.sending(3, connection: 9))
        XCTAssertFalse(ledger.sending(2, connection: 9))
        XCTAssertEqual(ledger.diagnosis(of: 3).probe, true)
    }

    func testFailureOfAReplacedConnectionLeavesTheCurrentOneWarm() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        ledger.started(2)
        XCTAssertTrue(ledger.sending(1, connection: 7))
        _ = ledger.headersComplete(1, status: 200)
        XCTAssertTrue(ledger.sending(2, connection: 7))
        ledger.started(3)
        XCTAssertTrue(ledger.sending(3, connection: 8))
        _ = ledger.headersComplete(3, status: 200)
        XCTAssertEqual(ledger.ended(2, .failed(.connection, status: 0)), .unanswered(.connection))
        XCTAssertTrue(ledger.warm)
        XCTAssertEqual(ledger.connection, 8)
    }

    func testTimedOutProbeIsDescribedWithItsConnection() {
        var ledger = APNsStreamLedger()
        ledger.started(1)
        ledger.started(2)
        XCTAssertTrue(ledger.sending(1, connection: 7))
        XCTAssertFalse(ledger.sending(2, connection: 7))
        ledger.started(3)
        let diagnosis = ledger.diagnosis(of: 1)
        XCTAssertEqual(
            diagnosis,
            APNsStreamLedger.Diagnosis(
                phase: .sent, onCurrentConnection: true, probe: true, connectionWarm: false, connectionPort: 7,
                onConnection: 1, waiting: 1))
        XCTAssertEqual(
            diagnosis.description,
            "stream: sent, no answer (probe); connection: cold port 7, 1 unanswered, 1 waiting for a connection")
        XCTAssertFalse(ledger.headersComplete(1, status: 503))
        XCTAssertEqual(ledger.diagnosis(of: 1).phase, .answerIncomplete)
    }
}
