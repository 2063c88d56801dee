import Clocks
import Foundation
import HTTPClient
import JSON
import Locking
import Logging

/// What became of one token of a batch.
package enum HMSDelivery: Equatable, Sendable {
    case accepted
    /// Huawei named the token illegal (80100000's `illegal_tokens`, or 80300007 for the whole request): the
    /// device is removed.
    case invalidToken(reason: String)
    /// Not delivered, the device kept; `status` 0 when Huawei gave no answer.
    case failed(reason: String, status: Int)
    /// No final answer because the sender shut down: the run leaves the target for its resumed run.
    case unfinished
}

/// Sends Huawei Push Kit v1 `messages:send` requests for one app: the OAuth token from `HMSAccessTokens` (reused,
/// shared with other nodes through the store, refreshed before expiry), one request per batch of at most 1,000 tokens, and each answer acted on per
/// `HMSAnswer`: a partial success resends nothing (the accepted tokens got the message; the illegal ones are
/// reported), a rejected access token is refreshed and the batch resent once, 503/502/81000001 and network
/// failures are resent after a backoff (at most `maxRetries` times, never past the batch's deadline or a cancel).
package final class HMSSender: Sendable {
    static let maxTokensPerRequest = 1000

    let configuration: HMSSenderConfiguration
    package let accessTokens: HMSAccessTokens
    private let client: HTTPExchangeClient
    private let sendURL: HTTPURL
    private let counters = Locked(Counters())

    package struct Counters: Sendable {
        package var requests = 0
        package var accepted = 0
        package var failed = 0
    }

    init(configuration: HMSSenderConfiguration) throws {
        self.configuration = configuration
        var base = configuration.pushBaseURL
        while base.hasSuffix("/") { base.removeLast() }
        sendURL = try HTTPURL(base + "/v1/\(configuration.appID)/messages:send")
        let tokenURL = try HTTPURL(configuration.oauthURL)
        let client = try HTTPExchangeClient(
            configuration: HTTPExchangeConfiguration(
                name: "hms", connections: 1, streamsPerConnection: 100, http2: true, httpsOnly: true,
                caFile: configuration.caFile, timeout: .seconds(configuration.requestTimeout)))
        self.client = client
        let form = HMSSenderConfiguration.formBody(
            clientID: configuration.clientID, clientSecret: configuration.clientSecret)
        let logger = configuration.logger
        accessTokens = HMSAccessTokens(
            clientID: configuration.clientID, clientSecret: configuration.clientSecret,
            logger: logger
        ) { () async -> Result<(token: String, expiresIn: Double), HMSTokenError> in
            let exchange = HTTPExchange(
                url: tokenURL,
                headers: [
                    "Content-Type: application/x-www-form-urlencoded",
                    "Accept: application/json",
                ], body: form)
            let response: HTTPExchangeResponse
            do throws(HTTPExchangeError) {
                response = try await client.send(exchange)
            } catch {
                return .failure(.unavailable(error.description))
            }
            let result = HMSSenderConfiguration.parseToken(status: response.status, body: response.body)
            if case .failure(let error) = result {
                logger.warning("HMS access token not issued", ["error": error.description])
            }
            return result
        }
    }

    /// Token requests made so far (for `/ready` and tests: never one per send).
    package var tokenFetches: Int { accessTokens.fetchCount }
    package func stats() -> Counters { counters.withLock { $0 } }

    /// Sends `message` (the publish's `message` object without a target) to `tokens` (at most 1,000) and returns
    /// each token's fate. Never resends a token Huawei accepted.
    func send(tokens: [String], message: [String: JSONValue], deadline: Date?, retries: RetryScope?) async -> [String:
        HMSDelivery]
    {
        await sendCounting(tokens: tokens, message: message, deadline: deadline, retries: retries).results
    }

    /// `send`, with the number of requests it took (the console's test push shows them as attempts).
    package func sendCounting(tokens: [String], message: [String: JSONValue], deadline: Date?, retries: RetryScope?)
        async
        -> (results: [String: HMSDelivery], requests: Int)
    {
        var results: [String: HMSDelivery] = [:]
        var requests = 0
        var pending = tokens
        var rejected: Int? = nil
        var refreshedOnce = false
        var attempts = 0
        func failAll(_ reason: String, _ status: Int = 0) {
            for token in pending { results[token] = .failed(reason: reason, status: status) }
            pending = []
        }
        while !pending.isEmpty {
            let token: HMSAccessToken
            switch await accessTokens.token(rejecting: rejected) {
            case .success(let fresh): token = fresh
            case .failure(.refused): failAll("AccessTokenRefused"); continue
            case .failure(.unavailable): failAll("AccessTokenUnavailable"); continue
            }
            var object = message
            object["token"] = .array(pending.map(JSONValue.string))
            let body = JSONValue.object(["validate_only": .bool(false), "message": .object(object)]).serialized()
            let exchange = HTTPExchange(
                url: sendURL,
                headers: [
                    "Authorization: Bearer \(token.value)",
                    "Content-Type: application/json;charset=utf-8",
                ], body: body)
            counters.withLock { $0.requests += 1 }
            requests += 1
            let answer: HMSAnswer
            var status = 0
            do throws(HTTPExchangeError) {
                let response = try await client.send(exchange)
                status = response.status
                answer = HMSAnswer.classify(
                    status: response.status, body: response.body, retryAfter: response.retryAfter)
            } catch  where error.kind == .shutdown {
                for token in pending { results[token] = .unfinished }
                pending = []
                continue
            } catch {
                answer = .retry(reason: "TransportError", retryAfter: nil)
            }
            switch answer {
            case .success:
                for token in pending { results[token] = .accepted }
                pending = []
            case .partial(let illegal):
                for token in pending {
                    results[token] = illegal.contains(token) ? .invalidToken(reason: "80100000") : .accepted
                }
                pending = []
            case .allTokensInvalid:
                for token in pending { results[token] = .invalidToken(reason: "80300007") }
                pending = []
            case .accessTokenRejected(let code):
                if refreshedOnce { failAll(code, status); continue }
                refreshedOnce = true
                rejected = token.generation
            case .retry(let reason, let retryAfter):
                attempts += 1
                let delay = min(retryAfter ?? configuration.backoffBase * pow(2, Double(attempts - 1)), 60)
                let late = deadline.map { Date().addingTimeInterval(delay) >= $0 } ?? false
                if attempts > configuration.maxRetries || late || retries?.isCancelled == true {
                    failAll(reason, status)
                    continue
                }
                try? await MonotonicTimer.sleep(for: .seconds(delay))
                if retries?.isCancelled == true { failAll("Cancelled") }
            case .failed(let reason):
                failAll(reason, status)
            }
        }
        let accepted = results.values.filter { $0 == .accepted }.count
        counters.withLock {
            $0.accepted += accepted
            $0.failed += results.count - accepted
        }
        return (results, requests)
    }

    func shutdown() async {
        await client.shutdown()
    }
}

/// How one app's HMS sender talks to Huawei (`instances[].hms`).
package struct HMSSenderConfiguration: Sendable, CustomStringConvertible {
    var clientID: String
    var clientSecret: String
    /// The `{id}` of the send URL: the app ID (by default the OAuth client ID, as for apps whose client ID is the
    /// app ID).
    var appID: String
    var oauthURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
    var pushBaseURL = "https://push-api.cloud.huawei.com"
    var caFile: String? = nil
    var requestTimeout: Int64 = 30
    /// Resends of a batch after 503/502/81000001 or no answer.
    var maxRetries = 3
    /// First backoff in seconds, doubled per resend (a `Retry-After` wins).
    var backoffBase = 1.0
    var logger = Logger(label: "hms")

    /// Without the secret, for logs.
    package var description: String {
        "HMSSenderConfiguration(appId: \(appID), clientId: \(clientID), clientSecret: <redacted>)"
    }

    /// `grant_type=client_credentials&client_id=…&client_secret=…`, each value form-encoded.
    static func formBody(clientID: String, clientSecret: String) -> [UInt8] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return Array(
            "grant_type=client_credentials&client_id=\(encode(clientID))&client_secret=\(encode(clientSecret))".utf8)
    }

    /// A token answer: 200 with `access_token` and `expires_in`; anything else is a refusal (5xx: unavailable).
    static func parseToken(status: Int, body: [UInt8]) -> Result<(token: String, expiresIn: Double), HMSTokenError> {
        let object = JSONValue.parse(body)?.objectValue
        guard status == 200 else {
            let detail = object?["error_description"]?.stringValue ?? "HTTP \(status)"
            return status >= 500 ? .failure(.unavailable(detail)) : .failure(.refused(String(detail.prefix(200))))
        }
        guard let token = object?["access_token"]?.stringValue, !token.isEmpty,
            token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
            let expiresIn = object?["expires_in"]?.doubleValue, expiresIn > 0
        else { return .failure(.refused("the answer lacks access_token or expires_in")) }
        return .success((token, expiresIn))
    }
}
