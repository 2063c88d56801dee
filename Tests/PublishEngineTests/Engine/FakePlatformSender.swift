import FCMClient
import Foundation
import Locking
import WebPush

@testable import PublishEngine

/// A scripted sender for engine tests (FCM and Web Push directly, APNs through `FakeSender`): answers per token from
/// a script (or holds the answer, a request in flight, until the test releases it), records every request in order,
/// and optionally has a window: `submit` suspends while `window` answers are held, and waiting submits get freed
/// slots first come, first served, as the real clients' pools do.
final class FakePlatformSender<Request: Sendable, Result: Sendable>: Sendable {
    enum Answer: Sendable {
        case respond(Result)
        case hold
    }

    struct Held: Sendable {
        let token: String
        let request: Request
        let onResult: @Sendable (Result) -> Void
    }

    struct State: Sendable {
        var script: [String: [Answer]] = [:]
        /// What answers a request with no script left (a test may change it mid-way).
        var defaultAnswer: Answer
        var sent: [Request] = []
        var held: [Held] = []
        var slotWaiters: [CheckedContinuation<Void, Never>] = []
        var slotsInUse = 0
        var isShutDown = false
        var shutdownCalls = 0
    }

    let state: WaitableState<State>
    private let window: Int?
    private let shutdownResult: Result
    private let token: @Sendable (Request) -> String

    init(
        window: Int? = nil, defaultAnswer: Answer, shutdownResult: Result,
        token: @escaping @Sendable (Request) -> String
    ) {
        self.window = window
        self.state = WaitableState(State(defaultAnswer: defaultAnswer))
        self.shutdownResult = shutdownResult
        self.token = token
    }

    /// Queues `answers` for the next requests to `token` (then the default answer).
    func script(_ token: String, _ answers: Answer...) {
        script(token, answers)
    }

    func script(_ token: String, _ answers: [Answer]) {
        state.update { $0.script[token, default: []] += answers }
    }

    var sentTokens: [String] { state.read { $0.sent.map(token) } }
    var heldTokens: [String] { state.read { $0.held.map(\.token) } }

    func submit(_ request: Request, onResult: @escaping @Sendable (Result) -> Void) async {
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
        let key = token(request)
        let answer = state.update { state -> Answer in
            if state.isShutDown { return .respond(shutdownResult) }
            state.sent.append(request)
            var answer = state.defaultAnswer
            if var queue = state.script[key], !queue.isEmpty {
                answer = queue.removeFirst()
                state.script[key] = queue
            }
            if case .hold = answer { state.held.append(Held(token: key, request: request, onResult: onResult)) }
            return answer
        }
        if case .respond(let result) = answer {
            if window != nil { freeSlot() }
            onResult(result)
        }
    }

    /// Answers the held request for `token` with `result`.
    func release(_ token: String, with result: Result) {
        let held = state.update { state -> Held? in
            guard let index = state.held.firstIndex(where: { $0.token == token }) else { return nil }
            return state.held.remove(at: index)
        }
        guard let held else { return }
        if window != nil { freeSlot() }
        held.onResult(result)
    }

    /// Answers every held request with `result`.
    func releaseAll(with result: Result) {
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

    /// The sender's `shutdown`: answers every held request and waiting submit with the shutdown result, refuses all
    /// later ones, and returns the requests that were held.
    func shutdownHeld() -> [Request] {
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
        for request in held { request.onResult(shutdownResult) }
        return held.map(\.request)
    }
}

typealias FakeFCMSender = FakePlatformSender<FCMRequest, FCMResult>
typealias FakeWebPushSender = FakePlatformSender<WebPushNotification, WebPushResult>

extension FakePlatformSender: FCMSending where Request == FCMRequest, Result == FCMResult {
    convenience init(window: Int? = nil, defaultAnswer: Answer = .respond(.sentByFake)) {
        self.init(window: window, defaultAnswer: defaultAnswer, shutdownResult: .failure(.shutdown), token: \.token)
    }

    func shutdown(gracePeriod: Duration) async -> [FCMRequest] { shutdownHeld() }
}

extension FakePlatformSender: WebPushSending where Request == WebPushNotification, Result == WebPushResult {
    convenience init(
        window: Int? = nil, defaultAnswer: Answer = .respond(.response(.accepted(status: 201), attempts: 1))
    ) {
        self.init(
            window: window, defaultAnswer: defaultAnswer, shutdownResult: .failure(.shutdown),
            token: { $0.subscription.endpoint.text })
    }

    func shutdown(gracePeriod: Duration) async -> [WebPushNotification] { shutdownHeld() }
}

extension FCMResult {
    static let sentByFake = FCMResult.response(.sent(name: "projects/p/messages/1"), attempts: 1)

    static func fcmError(_ code: String, status: Int) -> FCMResult {
        let info = FCMErrorInfo(httpStatus: status, status: nil, errorCode: code, message: "")
        switch code {
        case "UNREGISTERED": return .response(.invalidToken(info), attempts: 1)
        case "SENDER_ID_MISMATCH": return .response(.senderMismatch(info), attempts: 1)
        case "THIRD_PARTY_AUTH_ERROR": return .response(.authError(info), attempts: 1)
        default: return .response(.retry(info, retryAfter: nil), attempts: 3)
        }
    }
}
