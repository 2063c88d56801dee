import Foundation
import JSON

/// Launches the strict FCM stand-in (`Tests/Support/mock_fcm.py`: OAuth2 token endpoint and `messages:send` over
/// TLS, HTTP/2) and drives its control API (see Tests/Support/README.md).
///
/// ```swift
/// let mock = try MockFCM.start(serviceAccountFile: path)
/// defer { mock.stop() }
/// // the client's service account needs token_uri = mock.tokenURI; base URL mock.baseURL, CA mock.caFile
/// try mock.setBehaviour(token: "flaky-1", answer: "unavailable", times: 1)
/// ```
package final class MockFCM: Sendable {
    package let process: MockProcess
    /// `https://127.0.0.1:<port>`.
    package let baseURL: String
    /// The token endpoint: the assertion's `aud` must equal it.
    package let tokenURI: String
    package let caFile: String
    package let project: String

    private init(process: MockProcess) {
        self.process = process
        baseURL = process.string("base_url")
        tokenURI = process.string("token_uri")
        caFile = process.string("ca_file")
        project = process.string("project")
    }

    /// Starts the stand-in trusting the key in `serviceAccountFile`; `extraArguments` such as `["--project", "p"]`
    /// (the only project `messages:send` accepts; default the account's).
    package static func start(
        serviceAccountFile: String, retryAfterSeconds: Int = 1, tokenLifetimeSeconds: Int = 3599,
        extraArguments: [String] = []
    ) throws(MockAPNsError) -> MockFCM {
        MockFCM(
            process: try MockProcess(
                script: "mock_fcm.py",
                arguments: [
                    "--service-account", serviceAccountFile, "--retry-after-s", String(retryAfterSeconds),
                    "--token-lifetime-s", String(tokenLifetimeSeconds),
                ] + extraArguments))
    }

    /// Scripts `answer` (a marker kind such as `quota`, or `ok`) for `token` (or a prefix ending in `*`), for the
    /// next `times` sends (nil: every send).
    package func setBehaviour(token: String, answer: String, times: Int? = nil) throws(MockAPNsError) {
        var body: [String: JSONValue] = ["answer": .string(answer)]
        if let times { body["times"] = .int(times) }
        _ = try process.call("PUT", "/behaviours/\(token)", body: .object(body))
    }

    /// Changes run-time switches (`PUT /config`), e.g. `["token_refusal": "invalid_grant"]` to make the token
    /// endpoint refuse every assertion, `["token_refusal": ""]` to stop.
    package func configure(_ switches: [String: JSONValue]) throws(MockAPNsError) {
        _ = try process.call("PUT", "/config", body: .object(switches))
    }

    /// Every issued access token expires now: the next send with one gets `401`.
    package func expireTokens() throws(MockAPNsError) {
        _ = try process.call("POST", "/expire-tokens")
    }

    /// `token_requests`, `tokens_issued`, `sends`, `by_status`, `connections_opened`, `protocols`, …
    package func stats() throws(MockAPNsError) -> JSONValue {
        try process.call("GET", "/stats")
    }

    /// Recorded `messages:send` requests (`seq, time, token, status, error_code, …`), oldest first.
    package func requests(token: String? = nil) throws(MockAPNsError) -> [JSONValue] {
        let path = token.map { "/requests?token=\($0)" } ?? "/requests"
        return try process.call("GET", path).arrayValue ?? []
    }

    package func stop() { process.stop() }
}
