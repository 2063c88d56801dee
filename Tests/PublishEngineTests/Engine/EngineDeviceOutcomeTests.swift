import APNsClient
import BeamsModel
import Foundation
import PublishEngine
import PushStore
import XCTest

/// What APNs answers does to devices, through the whole engine: one retry in the other environment for a
/// defaulted environment, invalidation on 410 (Apple's timestamp rule) and on a bad token.
final class EngineDeviceOutcomeTests: XCTestCase {
    private func deliver(_ fixture: EngineFixture, _ sender: FakeSender, publishID: String = "p-1") async throws
        -> PublishStatus?
    {
        try await fixture.enqueue(publishID)
        let store = ScriptedStore(fixture.base)
        await fixture.runToFinish(store, sender: sender)
        return try await fixture.status(publishID)
    }

    func testDefaultedEnvironmentBadDeviceTokenIsRetriedOnceInTheOtherEnvironment() async throws {
        let fixture = EngineFixture()
        let token = try await fixture.addDevices(1...1, environment: .production, declared: false)[0]
        let sender = FakeSender()
        sender.script(token, .respond(.rejected(400, .badDeviceToken)))
        let status = try await deliver(fixture, sender)

        XCTAssertEqual(
            sender.sent, [.init(token: token, environment: .production), .init(token: token, environment: .sandbox)])
        XCTAssertEqual(status?.counters[.environmentRetries], 1)
        XCTAssertEqual(status?.counters[.environmentCorrected], 1)
        XCTAssertEqual(status?.accepted, 1)
        XCTAssertEqual(status?.counters[.targets], 1, "the retry is the same target")
        let device = try await fixture.device(token)
        XCTAssertEqual(device?.environment, .sandbox, "the retry proved the token's environment")
        XCTAssertNil(device?.invalidatedAt)
    }

    func testDefaultedEnvironmentRejectedInBothEnvironmentsIsInvalidatedAfterOneRetry() async throws {
        let fixture = EngineFixture()
        let token = try await fixture.addDevices(1...1, environment: .sandbox, declared: false)[0]
        let sender = FakeSender()
        sender.script(token, .respond(.rejected(400, .badDeviceToken)), .respond(.rejected(400, .badDeviceToken)))
        let status = try await deliver(fixture, sender)

        XCTAssertEqual(
            sender.sent, [.init(token: token, environment: .sandbox), .init(token: token, environment: .production)])
        XCTAssertEqual(status?.failedByReason, ["BadDeviceToken": 1])
        XCTAssertEqual(status?.counters[.devicesRemoved], 1)
        XCTAssertEqual(status?.counters[.environmentRetries], 1)
        let device = try await fixture.device(token)
        XCTAssertNotNil(device?.invalidatedAt)
    }

    func testDeclaredEnvironmentBadDeviceTokenIsNotRetriedAndInvalidatesTheDevice() async throws {
        let fixture = EngineFixture()
        let token = try await fixture.addDevices(1...1, environment: .production, declared: true)[0]
        let sender = FakeSender()
        sender.script(token, .respond(.rejected(400, .badDeviceToken)))
        let status = try await deliver(fixture, sender)

        XCTAssertEqual(sender.sentTokens, [token])
        XCTAssertNil(status?.counters[.environmentRetries])
        XCTAssertEqual(status?.counters[.devicesRemoved], 1)
        let device = try await fixture.device(token)
        XCTAssertNotNil(device?.invalidatedAt)
    }

    func testDeviceTokenNotForTopicInvalidatesTheDevice() async throws {
        let fixture = EngineFixture()
        let token = try await fixture.addDevices(1...1)[0]
        let sender = FakeSender()
        sender.script(token, .respond(.rejected(400, .deviceTokenNotForTopic)))
        let status = try await deliver(fixture, sender)

        XCTAssertEqual(status?.failedByReason, ["DeviceTokenNotForTopic": 1])
        let device = try await fixture.device(token)
        XCTAssertNotNil(device?.invalidatedAt)
    }

    func testUnregisteredAfterTheLastRegistrationInvalidatesTheDevice() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...2)
        let sender = FakeSender()
        sender.script(tokens[0], .respond(.rejected(410, .unregistered, timestamp: Date().addingTimeInterval(60))))
        let status = try await deliver(fixture, sender)

        XCTAssertEqual(status?.failedByReason, ["Unregistered": 1])
        XCTAssertEqual(status?.counters[.devicesRemoved], 1)
        XCTAssertEqual(status?.accepted, 1)
        let gone = try await fixture.device(tokens[0])
        XCTAssertNotNil(gone?.invalidatedAt)
        let kept = try await fixture.device(tokens[1])
        XCTAssertNil(kept?.invalidatedAt)
    }

    func testUnregisteredBeforeTheLastRegistrationKeepsTheDevice() async throws {
        let fixture = EngineFixture()
        let token = try await fixture.addDevices(1...1)[0]
        let sender = FakeSender()
        sender.script(token, .respond(.rejected(410, .unregistered, timestamp: Date(timeIntervalSince1970: 1_000_000))))
        let status = try await deliver(fixture, sender)

        XCTAssertEqual(status?.failedByReason, ["Unregistered": 1])
        XCTAssertNil(status?.counters[.devicesRemoved], "registered again after APNs' timestamp")
        let device = try await fixture.device(token)
        XCTAssertNil(device?.invalidatedAt)
    }

    func testInvalidatedDeviceIsNotSentToByTheNextPublish() async throws {
        let fixture = EngineFixture()
        let tokens = try await fixture.addDevices(1...2)
        let sender = FakeSender()
        sender.script(tokens[0], .respond(.rejected(400, .badDeviceToken)))
        _ = try await deliver(fixture, sender, publishID: "first")
        let next = FakeSender()
        let status = try await deliver(fixture, next, publishID: "second")

        XCTAssertEqual(next.sentTokens, [tokens[1]])
        XCTAssertEqual(status?.targetsTotal, 1)
    }

    func testTransportFailureIsAFinalResultThatLeavesTheDeviceAlone() async throws {
        let fixture = EngineFixture()
        let token = try await fixture.addDevices(1...1)[0]
        let sender = FakeSender()
        sender.script(
            token,
            .respond(
                .failure(
                    .transport(
                        APNsTransportError(kind: .timeout, code: 28, message: "timeout"),
                        attempts: 3))))
        let status = try await deliver(fixture, sender)

        XCTAssertEqual(status?.state, .finished)
        XCTAssertEqual(status?.failedByReason, ["TransportError": 1])
        let device = try await fixture.device(token)
        XCTAssertNil(device?.invalidatedAt)
        XCTAssertEqual(device?.lastResult?.status, 0)
    }
}
