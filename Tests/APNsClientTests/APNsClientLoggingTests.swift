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
        XCTAssertTrue(lines.contains { $0.contains("APNs rejected the credentials") && $0.contains("InvalidProviderToken") },
                      "\(lines)")
        let jwt = try XCTUnwrap(try mock.requests().first?.header("authorization"))
        for line in lines {
            XCTAssertFalse(line.contains(device), line)
            XCTAssertFalse(line.contains(String(jwt.dropFirst("bearer ".count).prefix(40))), line)
        }
    }
}
