import Clocks
import Foundation
import JSON
import Locking
import PushStore

/// Sends a run's HMS targets in batches: Huawei takes up to 1,000 tokens per request with one message, so targets
/// are gathered and sent together when 1,000 wait or `linger` seconds after the first of a batch, whichever comes
/// first. At most `maxBatchesInFlight` batches are out at once; `send` suspends beyond that, which holds the lane
/// back as a full window does for the other platforms. Each target's result is recorded exactly once, from its
/// token's fate in the batch (`HMSSender.send`).
package final class HMSDispatch: PlatformDispatch {
    private struct Pending {
        var targets: [Target] = []
        var timerArmed = false
        var batchesInFlight = 0
    }

    let sender: HMSSender?
    let message: [String: JSONValue]
    let recorder: DeliveryRecorder
    let expiresAt: Date?
    let linger: Double
    let maxBatchesInFlight: Int
    private let pending = WaitableState(Pending())

    init(
        sender: HMSSender?, message: [String: JSONValue], recorder: DeliveryRecorder, expiresAt: Date?,
        linger: Double = 0.02, maxBatchesInFlight: Int = 4
    ) {
        self.sender = sender
        self.message = message
        self.recorder = recorder
        self.expiresAt = expiresAt
        self.linger = linger
        self.maxBatchesInFlight = max(1, maxBatchesInFlight)
    }

    func send(_ target: Target) async {
        guard let sender else {
            recorder.notConfigured(target, reason: "NoHMSCredentials")
            return
        }
        let limit = maxBatchesInFlight
        await pending.wait { $0.batchesInFlight < limit }
        let (full, armTimer) = pending.update { state -> ([Target]?, Bool) in
            state.targets.append(target)
            if state.targets.count >= HMSSender.maxTokensPerRequest {
                defer { state.targets = [] }
                state.batchesInFlight += 1
                return (state.targets, false)
            }
            if state.timerArmed { return (nil, false) }
            state.timerArmed = true
            return (nil, true)
        }
        if let full { launch(full, sender) }
        if armTimer {
            let linger = linger
            Task {
                try? await MonotonicTimer.sleep(for: .seconds(linger))
                let batch = self.pending.update { state -> [Target]? in
                    state.timerArmed = false
                    guard !state.targets.isEmpty else { return nil }
                    defer { state.targets = [] }
                    state.batchesInFlight += 1
                    return state.targets
                }
                if let batch { self.launch(batch, sender) }
            }
        }
    }

    private func launch(_ batch: [Target], _ sender: HMSSender) {
        let message = message
        let recorder = recorder
        let deadline = expiresAt
        let retries = recorder.run.retries
        Task {
            var seen = Set<String>()
            let tokens = batch.map(\.token).filter { seen.insert($0).inserted }
            let results = await sender.send(tokens: tokens, message: message, deadline: deadline, retries: retries)
            let now = Date()
            for target in batch {
                let verdict = Self.verdict(results[target.token] ?? .failed(reason: "UnknownError", status: 0))
                recorder.record(DeliveryOutcome(verdict, on: .hms, target: target, now: now), for: target)
            }
            self.pending.update { $0.batchesInFlight -= 1 }
        }
    }

    /// Reasons the server gives HMS deliveries itself (besides Huawei's result codes and `HTTP<status>`).
    static let localReasons: Set<String> = [
        "NoHMSCredentials", "AccessTokenRefused", "AccessTokenUnavailable", "TransportError", "Cancelled",
        "UnknownError",
    ]

    /// One token's fate as the run counts it: an illegal token removes its device; other failures keep it.
    package static func verdict(_ delivery: HMSDelivery) -> PlatformVerdict {
        switch delivery {
        case .unfinished: return .unfinished
        case .accepted: return .accepted(status: 200)
        case .invalidToken(let reason): return .failed(reason, status: 200, effect: .badToken)
        case .failed(let reason, let status): return .failed(reason, status: status)
        }
    }
}
