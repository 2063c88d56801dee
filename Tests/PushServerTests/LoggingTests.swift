import Logging
import XCTest

final class LoggingTests: XCTestCase {
    func testMasksDeviceTokensKeepingEnds() {
        let token = String(repeating: "ab", count: 32)
        XCTAssertEqual(Redact.token(token), "abab…abab (64)")
        XCTAssertEqual(Redact.token("short"), "…(5)")
    }

    func testQuotesValuesSoTheyCannotForgeLines() {
        XCTAssertEqual(LogFormat.quote("plain"), "plain")
        XCTAssertEqual(LogFormat.quote("a b"), "\"a b\"")
        XCTAssertEqual(LogFormat.quote("x\nlevel=error"), "\"x\\nlevel=error\"")
        XCTAssertEqual(LogFormat.quote(""), "\"\"")
    }

    func testDropsRecordsBelowLevelAndKeepsMetadataOrder() {
        let sink = CapturingLogSink()
        let logger = Logger(label: "t", level: .info, sink: sink).with(["request": "r1"])
        logger.debug("hidden")
        logger.info("Shown", ["k": "v"])
        XCTAssertEqual(sink.lines, ["level=info label=t msg=Shown request=r1 k=v"])
    }

    func testTimestampIsRFC3339UTCWithMillis() {
        XCTAssertEqual(LogFormat.timestamp(Date(timeIntervalSince1970: 1_700_000_000.123)), "2023-11-14T22:13:20.123Z")
    }
}
