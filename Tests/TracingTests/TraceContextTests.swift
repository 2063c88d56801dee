import Tracing
import XCTest

final class TraceContextTests: XCTestCase {
    let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    func testValidTraceparentIsParsedWithItsIDsAndFlags() throws {
        let context = try XCTUnwrap(TraceContext(traceparent: valid, tracestate: "congo=t61rcWkgMzE"))
        XCTAssertEqual(context.traceID.hex, "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(context.spanID.hex, "00f067aa0ba902b7")
        XCTAssertTrue(context.isSampled)
        XCTAssertTrue(context.isRemote)
        XCTAssertEqual(context.traceState, "congo=t61rcWkgMzE")
        XCTAssertEqual(context.traceparent, valid)
    }

    func testUnsampledFlagsAreKept() throws {
        let context = try XCTUnwrap(
            TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"))
        XCTAssertFalse(context.isSampled)
        XCTAssertEqual(context.traceparent.suffix(2), "00")
    }

    func testUnknownFlagBitsAreClearedWhenPassedOn() throws {
        let context = try XCTUnwrap(
            TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-ff"))
        XCTAssertEqual(context.flags, 0x03)
    }

    func testAllZeroTraceIDIsRejected() {
        XCTAssertNil(TraceContext(traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"))
    }

    func testAllZeroParentIDIsRejected() {
        XCTAssertNil(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"))
    }

    func testVersionFFIsRejected() {
        XCTAssertNil(TraceContext(traceparent: "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
    }

    func testVersion00WithTrailingDataIsRejected() {
        XCTAssertNil(TraceContext(traceparent: valid + "-extra"))
    }

    func testHigherVersionIsReadByItsPrefix() throws {
        let context = try XCTUnwrap(
            TraceContext(traceparent: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds"))
        XCTAssertEqual(context.spanID.hex, "00f067aa0ba902b7")
        XCTAssertNil(TraceContext(traceparent: "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x"))
    }

    func testUpperCaseHexAndBadSeparatorsAndLengthsAreRejected() {
        XCTAssertNil(TraceContext(traceparent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01"))
        XCTAssertNil(TraceContext(traceparent: "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        XCTAssertNil(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01"))
        XCTAssertNil(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g"))
        XCTAssertNil(TraceContext(traceparent: ""))
    }

    func testMalformedTracestateIsIgnoredButTheParentKept() throws {
        let context = try XCTUnwrap(TraceContext(traceparent: valid, tracestate: "Upper=1"))
        XCTAssertEqual(context.traceState, "")
    }

    func testTracestateIsTrimmedAndCutByWholeMembers() throws {
        XCTAssertEqual(TraceState.normalized(" a=1 ,, b=2"), "a=1,b=2")
        let many = (0..<33).map { "k\($0)=v" }.joined(separator: ",")
        XCTAssertNil(TraceState.normalized(many))
        let long = (0..<10).map { "k\($0)=" + String(repeating: "x", count: 60) }.joined(separator: ",")
        let cut = try XCTUnwrap(TraceState.normalized(long))
        XCTAssertLessThanOrEqual(cut.utf8.count, TraceState.maxLength)
        XCTAssertTrue(cut.hasPrefix("k0="))
        XCTAssertEqual(cut.split(separator: ",").count, 8, "8 members of 63 characters and 7 commas are 511")
    }

    func testIDsRoundTripThroughHexInEitherCase() throws {
        let trace = TraceID.random()
        XCTAssertEqual(TraceID(hex: trace.hex), trace)
        XCTAssertEqual(TraceID(hex: trace.hex.uppercased()), trace)
        XCTAssertEqual(trace.hex.count, 32)
        XCTAssertNil(TraceID(hex: String(repeating: "0", count: 32)))
        XCTAssertNil(SpanID(hex: "0000000000000000"))
        XCTAssertEqual(SpanID.random().hex.count, 16)
    }
}
