import Foundation
import PostgreSQLStore
import PushStore
import XCTest

/// Text PostgreSQL cannot hold, arriving from the internet-facing APIs: answered, never a failure.
final class HostileTextTests: PostgreSQLTestCase {
    func testNULInLookupsFindsNothingAndInStoredFieldsIsKept() async throws {
        let store = try await openNode(poolSize: 1)
        let registered = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, token: token(1), bundleID: "com.example\u{0}app"))
        XCTAssertEqual(registered.device.bundleID, "com.example\u{FFFD}app")
        let facts = try await store.reportFacts(
            instanceID: instance, deviceID: registered.device.id + "\u{0}",
            publishID: "p\u{0}")
        XCTAssertEqual(facts, ReportFacts(device: nil, publish: nil))
        let recorded = try await store.recordEvents([
            ReportingEvent(
                instanceID: instance, publishID: "p\u{0}", deviceID: registered.device.id, userID: "u\u{0}",
                kind: .open, at: now)
        ])
        XCTAssertEqual(recorded, 1)
        try await store.close()
    }
}
