import Foundation
import Lifecycle
import Logging
import PushStore

/// Deletes history older than `storage.retentionDays` once an hour: ended publishes, reporting events, finished
/// webhooks, and devices APNs invalidated that long ago. Without it those tables only grow.
final class RetentionJanitor: Service {
    let name = "janitor"
    private let store: any RetentionStore
    private let retention: TimeInterval
    private let interval: Duration
    private let logger: Logger
    /// Rows of each kind deleted per transaction, so a large purge never holds the writer for long.
    static let sliceSize = 5000

    init(store: any RetentionStore, retentionDays: Int, interval: Duration = .seconds(3600), logger: Logger) {
        self.store = store
        self.retention = TimeInterval(retentionDays) * 86_400
        self.interval = interval
        self.logger = logger
    }

    /// Purges at start and then every `interval` until cancelled; returns at once when retention is 0 (keep
    /// forever). A purge under way stops after its current slice.
    func run() async {
        guard retention > 0 else { return }
        while !Task.isCancelled {
            await purgeOnce(now: Date())
            do {
                // The next run's time; cancellation ends the sleep at once.
                try await Task.sleep(for: interval)
            } catch {
                return
            }
        }
    }

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
                if !full || Task.isCancelled { break }
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
