import Clocks
import Foundation
import Lifecycle
import Logging
import PushStore

/// Deletes history older than `storage.retentionDays` once an hour: ended publishes, reporting events, finished
/// webhooks, and devices APNs invalidated that long ago. Without it those tables only grow. It also deletes Live
/// Activity update tokens past their expiry (at most 12 h after they were stored), whatever the retention, and
/// devices nobody delivered to that have not registered again for `storage.undeliveredDeviceDays` (junk an
/// anonymous client registered; docs/SECURITY.md "Disk").
package final class RetentionJanitor: Service {
    package let name = "janitor"
    private let store: any RetentionStore
    private let retention: TimeInterval
    private let undeliveredDeviceAge: TimeInterval
    private let interval: Duration
    private let logger: Logger
    private let liveActivities: (any LiveActivityRegistry)?
    /// Rows of each kind deleted per transaction, so a large purge never holds the writer for long.
    package static let sliceSize = 5000

    /// The invalidation log, its retention and its per-instance cap (`storage.invalidation*`); nil: not purged.
    private let invalidations: (any InvalidationLog)?
    private let invalidationRetention: TimeInterval
    private let invalidationsPerInstance: Int
    /// The audit log and how long it keeps an entry (`storage.auditRetentionDays`; 0: forever).
    private let audit: (any AuditLog)?
    private let auditRetention: TimeInterval

    package init(
        store: any RetentionStore, retentionDays: Int, undeliveredDeviceDays: Int = 0,
        interval: Duration = .seconds(3600), logger: Logger, liveActivities: (any LiveActivityRegistry)? = nil,
        invalidations: (any InvalidationLog)? = nil, invalidationRetentionDays: Int = 7,
        invalidationsPerInstance: Int = 100_000, audit: (any AuditLog)? = nil, auditRetentionDays: Int = 90
    ) {
        self.audit = audit
        self.auditRetention = TimeInterval(auditRetentionDays) * 86_400
        self.invalidations = invalidations
        self.invalidationRetention = TimeInterval(invalidationRetentionDays) * 86_400
        self.invalidationsPerInstance = invalidationsPerInstance
        self.store = store
        self.liveActivities = liveActivities
        self.retention = TimeInterval(retentionDays) * 86_400
        self.undeliveredDeviceAge = TimeInterval(undeliveredDeviceDays) * 86_400
        self.interval = interval
        self.logger = logger
    }

    /// Purges at start and then every `interval` until cancelled; returns at once when retention is 0 (keep
    /// forever). A purge under way stops after its current slice.
    package func run() async {
        guard
            retention > 0 || undeliveredDeviceAge > 0 || liveActivities != nil || invalidations != nil
                || audit != nil
        else { return }
        while !Task.isCancelled {
            await purgeOnce(now: Date())
            do {
                // The next run's time; cancellation ends the sleep at once.
                try await MonotonicTimer.sleep(for: interval)
            } catch {
                return
            }
        }
    }

    /// - Returns: the total rows deleted.
    @discardableResult
    package func purgeOnce(now: Date) async -> PurgeResult {
        var total = PurgeResult()
        let before = now.addingTimeInterval(-retention)
        do {
            while retention > 0 {
                let slice = try await store.purge(before: before, limit: Self.sliceSize)
                total.publishes += slice.publishes
                total.events += slice.events
                total.webhooks += slice.webhooks
                total.devices += slice.devices
                // `webhooks` sums two tables (webhooks and Beams bridge forwards), so it can pass the slice size.
                let full = [slice.publishes, slice.events, slice.webhooks, slice.devices].contains {
                    $0 >= Self.sliceSize
                }
                if !full || Task.isCancelled { break }
            }
        } catch {
            logger.error("Purging old history failed", ["error": "\(error)"])
        }
        if total != PurgeResult() {
            logger.info(
                "Purged old history",
                [
                    "publishes": String(total.publishes), "events": String(total.events),
                    "webhooks": String(total.webhooks), "devices": String(total.devices),
                ])
        }
        total.undeliveredDevices = await purgeUndeliveredDevices(now: now)
        await purgeExpiredLiveActivityTokens(now: now)
        await purgeInvalidations(now: now)
        await purgeAudit(now: now)
        return total
    }

    /// Deletes, in slices, audit entries older than their retention. - Returns: how many.
    @discardableResult
    package func purgeAudit(now: Date) async -> Int {
        guard let audit, auditRetention > 0 else { return 0 }
        var deleted = 0
        do {
            while !Task.isCancelled {
                let slice = try await audit.pruneAudit(
                    before: now.addingTimeInterval(-auditRetention),
                    limit: Self.sliceSize)
                deleted += slice
                if slice < Self.sliceSize { break }
            }
        } catch {
            logger.error("Purging old audit entries failed", ["error": "\(error)"])
        }
        if deleted > 0 { logger.info("Purged old audit entries", ["entries": String(deleted)]) }
        return deleted
    }

    /// Deletes, in slices, invalidation events older than their retention or beyond the per-instance cap.
    /// - Returns: how many.
    @discardableResult
    package func purgeInvalidations(now: Date) async -> Int {
        guard let invalidations else { return 0 }
        // Retention 0 keeps events until the cap: a cutoff no event is older than.
        let before = invalidationRetention > 0 ? now.addingTimeInterval(-invalidationRetention) : .distantPast
        var deleted = 0
        do {
            while !Task.isCancelled {
                let slice = try await invalidations.purgeInvalidations(
                    before: before, keepPerInstance: invalidationsPerInstance, limit: Self.sliceSize)
                deleted += slice
                if slice < Self.sliceSize { break }
            }
        } catch {
            logger.error("Purging old invalidation events failed", ["error": "\(error)"])
        }
        if deleted > 0 { logger.info("Purged old invalidation events", ["events": String(deleted)]) }
        return deleted
    }

    /// Deletes, in slices, devices that were never delivered to and have not registered again for
    /// `undeliveredDeviceAge` (0: never). - Returns: how many.
    @discardableResult
    package func purgeUndeliveredDevices(now: Date) async -> Int {
        guard undeliveredDeviceAge > 0 else { return 0 }
        var deleted = 0
        do {
            while !Task.isCancelled {
                let slice = try await store.purgeUndeliveredDevices(
                    registeredBefore: now.addingTimeInterval(-undeliveredDeviceAge), limit: Self.sliceSize)
                deleted += slice
                if slice < Self.sliceSize { break }
            }
        } catch {
            logger.error("Expiring undelivered devices failed", ["error": "\(error)"])
        }
        if deleted > 0 { logger.info("Expired devices nobody delivered to", ["devices": String(deleted)]) }
        return deleted
    }

    /// Deletes expired Live Activity rows in slices. - Returns: how many.
    @discardableResult
    package func purgeExpiredLiveActivityTokens(now: Date) async -> Int {
        guard let liveActivities else { return 0 }
        var deleted = 0
        do {
            while !Task.isCancelled {
                let slice = try await liveActivities.purgeExpiredLiveActivityTokens(before: now, limit: Self.sliceSize)
                deleted += slice
                if slice < Self.sliceSize { break }
            }
        } catch {
            logger.error("Purging expired Live Activity tokens failed", ["error": "\(error)"])
        }
        if deleted > 0 { logger.info("Purged expired Live Activity tokens", ["tokens": String(deleted)]) }
        return deleted
    }
}
