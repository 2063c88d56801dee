import Clocks
import Foundation
import Locking
import Logging
import PushStore

/// The store's health for `/ready`, `/metrics`, the log and the clients' 503s.
///
/// Fed by the store's health events (`SQLitePushStore.Configuration.healthEvents`), it keeps a `StoreWriteState`,
/// logs its reports, and feeds `push_store_writable` and `push_store_unavailable_total{reason}`. While
/// writes fail, `run` probes the store every `probeInterval`, so the server notices by itself that space came back
/// even when nothing else writes (a load balancer stops sending traffic once `/ready` says 503); `StoreWatchdog` runs
/// it as a service.
package final class StoreHealth: Sendable {
    /// What `/ready` shows.
    package struct Snapshot: Sendable, Equatable {
        package var writable: Bool
        package var failingSince: Date?
        package var lastFailure: StoreUnavailableError?
        package var failures: Int
    }

    /// The `Retry-After` of a 503 answered while the store is unavailable.
    package let retryAfterSeconds: Int
    private let state: Locked<StoreWriteState>
    private let metrics: Metrics
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let outages: AsyncStream<Void>
    private let outageStarted: AsyncStream<Void>.Continuation

    package init(
        logInterval: TimeInterval, retryAfterSeconds: Int, metrics: Metrics, logger: Logger,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.retryAfterSeconds = retryAfterSeconds
        self.state = Locked(StoreWriteState(logInterval: logInterval))
        self.metrics = metrics
        self.logger = logger
        self.now = now
        (outages, outageStarted) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        metrics.declare(.storeWritable)
        metrics.declare(.storeUnavailable)
        metrics.set(.storeWritable, to: 1)
        // Read from the state at scrape time, so concurrent events can never leave the gauge stale.
        metrics.addCollector { [state] metrics in
            metrics.set(.storeWritable, to: state.withLock { $0.isWritable } ? 1 : 0)
        }
    }

    /// Takes a store health event in (called on the store's threads).
    package func record(_ event: StoreHealthEvent) {
        let (report, wasWritable, writable) = state.withLock { state in
            let was = state.isWritable
            return (state.record(event, at: now()), was, state.isWritable)
        }
        if case .failed(let error) = event {
            metrics.increment(.storeUnavailable, ["reason": error.reason.rawValue])
        }
        if wasWritable && !writable { outageStarted.yield() }
        switch report {
        case .failing(let error):
            logger.error(
                "Store cannot write: requests that store data get 503 until it can",
                [
                    "reason": error.reason.rawValue, "error": error.detail,
                ])
        case .stillFailing(let error, let since, let failures):
            logger.error(
                "Store still cannot write",
                [
                    "reason": error.reason.rawValue, "error": error.detail, "since": LogFormat.timestamp(since),
                    "failures": String(failures),
                ])
        case .recovered(let since, let failures):
            logger.notice(
                "Store writes again",
                [
                    "since": LogFormat.timestamp(since), "failures": String(failures),
                    "outage_seconds": String(Int(now().timeIntervalSince(since).rounded())),
                ])
        case nil:
            break
        }
    }

    package var snapshot: Snapshot {
        state.withLock { state in
            Snapshot(
                writable: state.isWritable, failingSince: state.outage?.since, lastFailure: state.outage?.last,
                failures: state.outage?.failures ?? 0)
        }
    }

    var isWritable: Bool { state.withLock { $0.isWritable } }

    /// Sleeps until an outage starts, then probes the store every `probeInterval` (a real deadline) until it
    /// writes again; returns when cancelled (see `StoreWatchdog`).
    package func run(store: any StoreBackend, probeInterval: Duration = .seconds(1)) async {
        // Ends when the task is cancelled.
        for await _ in outages {
            while !isWritable {
                do {
                    try await MonotonicTimer.sleep(for: probeInterval)
                } catch {
                    return
                }
                // The outcome reaches `record` through the store's health events.
                try? await store.probeWrite()
            }
        }
    }
}
