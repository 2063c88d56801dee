import Foundation
import Logging
import PushStore
import Locking

/// Deletes history older than `storage.retentionDays` once an hour: ended publishes, reporting events, finished
/// webhooks, and devices APNs invalidated that long ago. Without it those tables only grow.
final class RetentionJanitor: Sendable {
    private let store: any RetentionStore
    private let retention: TimeInterval
    private let logger: Logger
    private let stopped = Locked(false)
    /// Rows of each kind deleted per transaction, so a large purge never holds the writer for long.
    static let sliceSize = 5000

    init(store: any RetentionStore, retentionDays: Int, logger: Logger) {
        self.store = store
        self.retention = TimeInterval(retentionDays) * 86_400
        self.logger = logger
    }

    /// Purges at start and then every `interval` until `stop()`; does nothing when retention is 0 (keep forever).
    func run(interval: Duration = .seconds(3600)) async {
        guard retention > 0 else { return }
        while !stopped.withLock({ $0 }) {
            await purgeOnce(now: Date())
            var slept = Duration.zero
            while slept < interval && !stopped.withLock({ $0 }) {
                try? await Task.sleep(for: .seconds(1))
                slept += .seconds(1)
            }
        }
    }

    func stop() { stopped.withLock { $0 = true } }

    /// - Returns: the total rows deleted.
    @discardableResult
    func purgeOnce(now: Date) async -> PurgeResult {
        var total = PurgeResult()
        let before = now.addingTimeInterval(-retention)
        do {
            while true {
                let slice = try await store.purge(before: before, limit: Self.sliceSize)
                total.publishes += slice.publishes
                total.events += slice.events
                total.webhooks += slice.webhooks
                total.devices += slice.devices
                let full = [slice.publishes, slice.events, slice.webhooks, slice.devices].contains(Self.sliceSize)
                if !full || stopped.withLock({ $0 }) { break }
            }
        } catch {
            logger.error("Purging old history failed", ["error": "\(error)"])
        }
        if total != PurgeResult() {
            logger.info("Purged old history", [
                "publishes": String(total.publishes), "events": String(total.events),
                "webhooks": String(total.webhooks), "devices": String(total.devices),
            ])
        }
        return total
    }
}
