import APNsClient
import Foundation
import Locking
import PublishEngine

/// An `APNsSending` for engine tests: `FakePlatformSender` (script, holds, window) over APNs requests, recording
/// the environment each request was sent to.
final class FakeSender: APNsSending {
    /// What the sender was asked to send: the request and its environment.
    struct Submission: Sendable {
        let request: APNsRequest
        let environment: APNsEnvironment
        var token: String { request.deviceToken }
    }

    typealias Core = FakePlatformSender<Submission, APNsResult>
    typealias Answer = Core.Answer

    struct Sent: Sendable, Equatable {
        let token: String
        let environment: APNsEnvironment
    }

    private let core: Core
    var state: WaitableState<Core.State> { core.state }

    init(window: Int? = nil, defaultAnswer: Answer = .respond(.accepted)) {
        core = Core(
            window: window, defaultAnswer: defaultAnswer, shutdownResult: .failure(.shutdown),
            token: \.token)
    }

    /// Queues `answers` for the next requests to `token` (then the default answer).
    func script(_ token: String, _ answers: Answer...) {
        core.script(token, answers)
    }

    var sent: [Sent] { state.read { $0.sent.map { Sent(token: $0.token, environment: $0.environment) } } }
    var sentTokens: [String] { core.sentTokens }
    var heldTokens: [String] { core.heldTokens }
    var heldRequests: [APNsRequest] { state.read { $0.held.map(\.request.request) } }

    func submit(
        _ request: APNsRequest, credentials: APNsCredentials, environment: APNsEnvironment,
        onResult: @escaping @Sendable (APNsResult) -> Void
    ) async {
        await core.submit(Submission(request: request, environment: environment), onResult: onResult)
    }

    /// Answers the held request for `token` with `result`.
    func release(_ token: String, with result: APNsResult = .accepted) {
        core.release(token, with: result)
    }

    /// Answers every held request with `result`.
    func releaseAll(with result: APNsResult = .accepted) {
        core.releaseAll(with: result)
    }

    func shutdown(gracePeriod: Duration) async -> [APNsRequest] {
        core.shutdownHeld().map(\.request)
    }
}

extension APNsResult {
    static let accepted = APNsResult.response(APNsResponse(status: 200))

    static func rejected(_ status: Int, _ reason: APNsReason, timestamp: Date? = nil) -> APNsResult {
        .response(APNsResponse(status: status, reason: reason, timestamp: timestamp))
    }
}

/// Credentials whose key never signs: the fake sender does not need a provider token.
struct UnusedSigningKey: APNsProviderTokenSigning {
    func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String { "unused" }
}
