import APNsClient
import Foundation
import Locking

/// What `/ready` says about APNs: when it last answered, and when and why a request last failed without an
/// answer (connection refused, TLS failure, timeouts after every retry).
package final class APNsHealth: Sendable {
    package struct Snapshot: Sendable, Equatable {
        var lastAnswer: Date?
        var lastFailure: Date?
        package var lastFailureReason: String?

        /// `reachable` when the latest event was an answer, `unreachable` when it was a transport failure,
        /// `unknown` before any request.
        package var state: String {
            switch (lastAnswer, lastFailure) {
            case (nil, nil): return "unknown"
            case (.some, nil): return "reachable"
            case (nil, .some): return "unreachable"
            case (.some(let answer), .some(let failure)): return answer >= failure ? "reachable" : "unreachable"
            }
        }
    }

    private let state = Locked(Snapshot())

    package init() {}

    /// Records one final result (called from the APNs client's result callbacks: cheap and non-blocking).
    package func record(_ result: APNsResult, at now: Date = Date()) {
        switch result {
        case .response:
            state.withLock { $0.lastAnswer = now }
        case .failure(.transport(let error, _)):
            state.withLock {
                $0.lastFailure = now
                $0.lastFailureReason = error.description
            }
        case .failure:
            break  // local rule violations, configuration faults and shutdown say nothing about reachability
        }
    }

    package var snapshot: Snapshot { state.withLock { $0 } }
}
