import APNsClient
import BeamsModel
import Clocks
import Foundation
import Logging
import Observability
import PushStore

/// Sends a broadcast publish (`PublishPlan.broadcast`): one APNs broadcast per channel, in order, each retried by
/// the instance's APNs retry policy (5xx, 429, connection loss, timeouts) and recorded as a final result, so the
/// run's checkpoints make it durable like a device publish: channel `index + 1` is the target ref, and a resumed
/// run skips the channels already answered.
///
/// Counters per channel (`PublishCounters.Counter.channelAccepted`, `.channelFailed`, `.channelAttempts`) let the
/// status API show each channel's outcome; `.channelsAccepted` and `.channelsFailed` total them.
package struct BroadcastFeeder: Sendable {
    let context: PublishContext
    let run: PublishRun
    let instance: InstanceRuntime
    let log: Logger

    /// - Returns: true when every channel has a final result.
    func deliver(_ plan: BroadcastPlan, skipping answered: Set<Int64>) async -> Bool {
        defer { run.endSubmission() }
        for index in plan.channels.indices {
            let ref = Int64(index + 1)
            if ref <= run.claimed.cursor || answered.contains(ref) { continue }
            if run.mustStop { return false }
            run.submittedChannel(ref: ref)
            guard let counters = await send(plan, index: index) else {
                run.abandonedChannel()
                return false
            }
            run.completedChannel(ref: ref, counters: counters)
            let failure = counters.channelFailures.keys.first
            context.metrics.increment(
                .broadcasts,
                [
                    "outcome": failure == nil ? "accepted" : "failed",
                    "reason": MetricLabel.reason(failure),
                ])
            run.scanned(upTo: ref)
        }
        run.scanned(upTo: Int64(plan.channels.count))
        return true
    }

    /// Sends to one channel until the retry policy says the outcome is final. - Returns: the counters of the final
    /// result, or nil when the run stopped (shutdown) before one arrived: the channel is sent again later.
    private func send(_ plan: BroadcastPlan, index: Int) async -> PublishCounters? {
        let channel = plan.channels[index]
        guard let credentials = instance.credentials, let endpoints = instance.broadcastEndpoints,
            let bundleID = instance.broadcastBundleID, let broadcaster = context.broadcaster
        else {
            return Self.counters(channel, failed: "NoAPNsCredentials", attempts: 0)
        }
        let policy = context.broadcastRetryPolicy
        let started = MonotonicClock.now()
        var attempts = 0
        var tokenRefreshed = false
        while true {
            attempts += 1
            let result = await broadcaster.broadcast(
                plan.request(at: index), bundleID: bundleID, endpoints: endpoints,
                credentials: credentials)
            let outcome: APNsRetryPolicy.Outcome
            let finalReason: String?
            switch result {
            case .response(let response):
                if response.isSuccess {
                    log.info(
                        "Broadcast accepted",
                        [
                            "channel": channel.rawValue, "attempts": String(attempts),
                            "requestId": response.requestID ?? "",
                        ])
                    return Self.counters(channel, failed: nil, attempts: attempts)
                }
                outcome = .response(status: response.status, reason: response.reason)
                finalReason = response.reason?.rawValue ?? "HTTP\(response.status)"
            case .failure(.shutdown):
                return nil
            case .failure(.transport(let error)):
                outcome = .transport(error.kind)
                finalReason = "TransportError"
            case .failure(.invalidRequest(let violation)):
                log.error("Broadcast refused locally", ["channel": channel.rawValue, "violation": "\(violation)"])
                return Self.counters(channel, failed: "InvalidPayload", attempts: attempts)
            case .failure(.configuration(let fault)):
                let reason: String
                switch fault {
                case .rejected(_, let apnsReason): reason = apnsReason.rawValue
                case .expiredTokenBeforeRefreshFloor: reason = APNsReason.expiredProviderToken.rawValue
                case .signingFailed: reason = "ProviderTokenSigningFailed"
                }
                return Self.counters(channel, failed: reason, attempts: attempts)
            }
            let elapsed = Double(MonotonicClock.elapsed(since: started).components.seconds)
            switch policy.decide(
                outcome, attempts: attempts, elapsed: elapsed, tokenRefreshed: tokenRefreshed,
                random: Double.random(in: 0..<1))
            {
            case .retry(let delay), .retryAfterTokenUpdateRejected(let delay):
                log.notice(
                    "Broadcast failed; retrying",
                    [
                        "channel": channel.rawValue, "reason": finalReason ?? "",
                        "attempt": String(attempts),
                    ])
                if delay > 0 {
                    await run.pause(for: .milliseconds(Int64(min(delay, 3600) * 1000)))
                }
                if run.mustStop { return nil }
            case .refreshTokenAndRetry:
                tokenRefreshed = true  // the client refreshed once already; this is the policy's bookkeeping
            case .finish, .configurationFault:
                log.notice(
                    "Broadcast failed",
                    [
                        "channel": channel.rawValue, "reason": finalReason ?? "",
                        "attempts": String(attempts),
                    ])
                return Self.counters(channel, failed: finalReason ?? "Unknown", attempts: attempts)
            }
        }
    }

    /// A channel's counters (read back by the status API, `BroadcastStatus`): its attempts and outcome, and the
    /// publish's totals.
    static func counters(_ channel: APNsChannelID, failed reason: String?, attempts: Int) -> PublishCounters {
        let id = channel.rawValue
        var counters: PublishCounters = [.channelAttempts(channel: id): Int64(attempts)]
        if let reason {
            counters[.channelsFailed(reason: reason)] = 1
            counters[.channelFailed(channel: id, reason: reason)] = 1
        } else {
            counters[.channelsAccepted] = 1
            counters[.channelAccepted(channel: id)] = 1
        }
        return counters
    }
}
