import APNsClient
import Foundation
@testable import PushServer

/// An `APNsSending` for engine tests: answers per token from a script (or holds the answer, a request in flight,
/// until the test releases it), records every request in order, and optionally has a window: `submit` suspends
/// while `window` answers are held, and waiting submits get freed slots first come, first served, as the real
/// client's pool does.
final class FakeSender: APNsSending {
    enum Answer: Sendable {
        case respond(APNsResult)
        case hold
    }

    struct Sent: Sendable, Equatable {
        let token: String
        let environment: APNsEnvironment
    }

    struct Held: Sendable {
        let request: APNsRequest
        let environment: APNsEnvironment
        let onResult: @Sendable (APNsResult) -> Void
    }

    struct State: Sendable {
        var script: [String: [Answer]] = [:]
        var defaultAnswer: Answer = .respond(.accepted)
        var sent: [Sent] = []
        var held: [Held] = []
        var slotWaiters: [CheckedContinuation<Void, Never>] = []
        var slotsInUse = 0
        var isShutDown = false
        var shutdownCalls = 0
    }

    let state = WaitableState(State())
    private let window: Int?

    init(window: Int? = nil, defaultAnswer: Answer = .respond(.accepted)) {
        self.window = window
        state.update { $0.defaultAnswer = defaultAnswer }
    }

    /// Queues `answers` for the next requests to `token` (then the default answer).
    func script(_ token: String, _ answers: Answer...) {
        state.update { $0.script[token, default: []] += answers }
    }

    var sent: [Sent] { state.read(\.sent) }
    var sentTokens: [String] { sent.map(\.token) }
    var heldTokens: [String] { state.read { $0.held.map(\.request.deviceToken) } }

    func submit(_ request: APNsRequest, credentials: APNsCredentials, environment: APNsEnvironment,
                onResult: @escaping @Sendable (APNsResult) -> Void) async {
        if let window {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let granted = state.update { state -> Bool in
                    if state.isShutDown || (state.slotsInUse < window && state.slotWaiters.isEmpty) {
                        state.slotsInUse += 1
                        return true
                    }
                    state.slotWaiters.append(continuation)
                    return false
                }
                if granted { continuation.resume() }
            }
        }
        let answer = state.update { state -> Answer in
            if state.isShutDown { return .respond(.failure(.shutdown)) }
            state.sent.append(Sent(token: request.deviceToken, environment: environment))
            var answer = state.defaultAnswer
            if var queue = state.script[request.deviceToken], !queue.isEmpty {
                answer = queue.removeFirst()
                state.script[request.deviceToken] = queue
            }
            if case .hold = answer {
                state.held.append(Held(request: request, environment: environment, onResult: onResult))
            }
            return answer
        }
        if case .respond(let result) = answer {
            if window != nil { freeSlot() }
            onResult(result)
        }
    }

    /// Answers the held request for `token` with `result`.
    func release(_ token: String, with result: APNsResult = .accepted) {
        let held = state.update { state -> Held? in
            guard let index = state.held.firstIndex(where: { $0.request.deviceToken == token }) else { return nil }
            return state.held.remove(at: index)
        }
        guard let held else { return }
        if window != nil { freeSlot() }
        held.onResult(result)
    }

    /// Answers every held request with `result`.
    func releaseAll(with result: APNsResult = .accepted) {
        for token in heldTokens { release(token, with: result) }
    }

    private func freeSlot() {
        let next = state.update { state -> CheckedContinuation<Void, Never>? in
            if state.slotWaiters.isEmpty {
                state.slotsInUse -= 1
                return nil
            }
            return state.slotWaiters.removeFirst()
        }
        next?.resume()
    }

    func shutdown(gracePeriod: Double) async -> [APNsRequest] {
        let (held, waiters) = state.update { state -> ([Held], [CheckedContinuation<Void, Never>]) in
            state.isShutDown = true
            state.shutdownCalls += 1
            defer {
                state.held.removeAll()
                state.slotWaiters.removeAll()
            }
            return (state.held, state.slotWaiters)
        }
        for waiter in waiters { waiter.resume() }
        for request in held { request.onResult(.failure(.shutdown)) }
        return held.map(\.request)
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
