import APNsClient
import Foundation
import Logging
import TestSupport
import XCTest

final class APNsClientLoggingTests: MockAPNsTestCase {
    func testLogsCredentialFaultsWithoutDeviceTokensOrProviderTokens() async throws {
        let mock = try startMock()
        let sink = CapturingLogSink()
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                connectionsPerPool: 1, streamsPerConnection: 4, retryPolicy: Self.fastRetries,
                logger: Logger(label: "apns", level: .trace, sink: sink)))
        clients.append(client)
        let device = token(1, prefix: "72")
        try mock.setBehaviour(token: device, .init(status: 403, reason: "InvalidProviderToken"))
        let result = await send(client, alert(device))
        XCTAssertEqual(result, .failure(.configuration(.rejected(status: 403, reason: .invalidProviderToken))))

        let lines = sink.lines
        XCTAssertTrue(
            lines.contains { $0.contains("APNs rejected the credentials") && $0.contains("InvalidProviderToken") },
            "\(lines)")
        let jwt = try XCTUnwrap(try mock.requests().first?.header("authorization"))
        for line in lines {
            XCTAssertFalse(line.contains(device), line)
            XCTAssertFalse(line.contains(String(jwt.dropFirst("bearer ".count).prefix(40))), line)
        }
    }

    func testRequestTimeoutLogsWhereTheStreamAndItsConnectionStood() async throws {
        let mock = try startMock()
        let sink = CapturingLogSink()
        let client = try APNsClient(
            configuration: APNsClientConfiguration(
                connectionsPerPool: 1, streamsPerConnection: 4, requestTimeout: 1,
                retryPolicy: APNsRetryPolicy(maxAttempts: 1),
                logger: Logger(label: "apns", level: .trace, sink: sink)))
        clients.append(client)
        // APNs stops answering: the connection's first request never gets its answer.
        let device = token(2, prefix: "73")
        try mock.setBehaviour(token: device, .init(delayMs: 5000))
        let result = await send(client, alert(device))
        guard case .failure(.transport(let error, attempts: 1)) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(error.kind, .timeout)
        let line = try XCTUnwrap(sink.lines.first { $0.contains("APNs request timed out") }, "\(sink.lines)")
        XCTAssertTrue(line.contains("stream: sent, no answer (probe)"), line)
        XCTAssertTrue(line.contains("connection: cold port "), line)
        XCTAssertTrue(line.contains("1 unanswered, 0 waiting for a connection"), line)
        XCTAssertFalse(line.contains(device), line)
    }
}
