import BeamsModel
import Foundation
import PublishEngine
import PushStore
import XCTest

/// The engine's local-time rounds, built on `LocalTime.nextOccurrence` (tested in BeamsModelTests' LocalTimeTests).
final class LocalTimeRoundTests: XCTestCase {
    private func target(_ ref: Int64, _ zone: String?) -> Target {
        Target(
            ref: ref, deviceID: "d\(ref)", platform: .apns, token: "t", environment: .production,
            environmentDeclared: false, lastRegisteredAt: Date(timeIntervalSince1970: 0), userID: nil, timeZone: zone)
    }

    func testARoundSendsTheZonesDueAtItsMomentAndNamesTheNextRound() throws {
        var delivery = DeliveryOptions()
        delivery.localTime = LocalTime("09:00")
        delivery.localTimeFrom = RFC3339.parse("2026-06-01T07:30:00Z")
        delivery.defaultTimeZone = "America/New_York"
        let first = try XCTUnwrap(LocalTimeRound(delivery: delivery, roundAt: delivery.localTimeFrom))
        let targets = [
            target(1, "UTC"), target(2, nil), target(3, "Europe/Paris"), target(4, "Not/AZone"),
            target(5, "Etc/UTC"),
        ]
        XCTAssertEqual(targets.filter(first.isDue).map(\.ref), [], "nobody's 09:00 is at 07:30 UTC")
        XCTAssertEqual(first.nextRound, RFC3339.parse("2026-06-01T09:00:00Z"))

        let second = try XCTUnwrap(LocalTimeRound(delivery: delivery, roundAt: first.nextRound))
        XCTAssertEqual(targets.filter(second.isDue).map(\.ref), [1, 5], "UTC and Etc/UTC share the round")
        XCTAssertEqual(second.nextRound, RFC3339.parse("2026-06-01T13:00:00Z"))

        let third = try XCTUnwrap(LocalTimeRound(delivery: delivery, roundAt: second.nextRound))
        XCTAssertEqual(targets.filter(third.isDue).map(\.ref), [2, 4], "no zone and unknown zones use the default")
        XCTAssertEqual(third.nextRound, RFC3339.parse("2026-06-02T07:00:00Z"))

        let last = try XCTUnwrap(LocalTimeRound(delivery: delivery, roundAt: third.nextRound))
        XCTAssertEqual(targets.filter(last.isDue).map(\.ref), [3])
        XCTAssertNil(last.nextRound, "every zone had its round")
        XCTAssertNil(LocalTimeRound(delivery: DeliveryOptions(), roundAt: nil), "no local time, no rounds")
    }
}
