import APNsClient
import Foundation
import Observability
import XCTest

final class APNsHealthTests: XCTestCase {
    func testStateFollowsTheLatestAnswerOrTransportFailure() {
        let health = APNsHealth()
        XCTAssertEqual(health.snapshot.state, "unknown")
        let t0 = Date(timeIntervalSince1970: 1_000)
        health.record(.response(APNsResponse(status: 410, reason: .unregistered)), at: t0)
        XCTAssertEqual(health.snapshot.state, "reachable", "any answer, even an error status, means APNs is reachable")
        health.record(
            .failure(.transport(APNsTransportError(kind: .connection, code: 7, message: "refused"), attempts: 5)),
            at: t0.addingTimeInterval(1))
        XCTAssertEqual(health.snapshot.state, "unreachable")
        XCTAssertEqual(health.snapshot.lastFailureReason, "connection code=7 refused")
        health.record(.failure(.invalidRequest(.emptyPayload)), at: t0.addingTimeInterval(2))
        XCTAssertEqual(health.snapshot.state, "unreachable", "a local rule violation says nothing about APNs")
        health.record(.response(APNsResponse(status: 200)), at: t0.addingTimeInterval(3))
        XCTAssertEqual(health.snapshot.state, "reachable")
    }
}
