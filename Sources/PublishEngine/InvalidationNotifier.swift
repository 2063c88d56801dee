import Clocks
import ConfigModel
import Foundation
import Lifecycle
import Logging
import PushStore

/// Hands each logged invalidation (`InvalidationLog`) to the webhook outbox as a `device.invalidated` event for
/// instances with a `webhook.invalidationsUrl`, then marks it notified; events of other instances are marked
/// without a webhook. The log row is written in the transaction that invalidated the device, so no invalidation is
/// missed across a crash; one that crashes between queueing and marking is queued again after the restart, with
/// the same `webhook-id` (at least once; receivers de-duplicate by id). Two nodes reading the same batch at the
/// same moment may both queue it, again with one id.
///
/// A `Service`: it looks every `interval` (invalidations are committed by any node's publish, so there is no
/// local signal to wait for), and after a batch that filled `batchSize` at once.
package final class InvalidationNotifier: Service {
    static let batchSize = 200
    package let name = "invalidations"
    private let store: any InvalidationLog
    /// The instance an invalidation belongs to, nil when it is no longer served.
    private let lookup: @Sendable (String) -> InstanceConfig?
    private let send: @Sendable (InstanceConfig, DeviceInvalidation) async -> Void
    private let interval: Duration
    private let logger: Logger

    init(
        store: any InvalidationLog, instances: [InstanceConfig], interval: Duration = .seconds(1), logger: Logger,
        send: @escaping @Sendable (InstanceConfig, DeviceInvalidation) async -> Void
    ) {
        self.store = store
        let byID = Dictionary(instances.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        self.lookup = { byID[$0] }
        self.interval = interval
        self.logger = logger
        self.send = send
    }

    /// Looks each invalidation's instance up through `lookup` (the instance directory: run-time instances too).
    package init(
        store: any InvalidationLog, lookup: @escaping @Sendable (String) -> InstanceConfig?,
        interval: Duration = .seconds(1), logger: Logger,
        send: @escaping @Sendable (InstanceConfig, DeviceInvalidation) async -> Void
    ) {
        self.store = store
        self.lookup = lookup
        self.interval = interval
        self.logger = logger
        self.send = send
    }

    package func run() async {
        while !Task.isCancelled {
            let handed = await notifyOnce()
            if handed == Self.batchSize { continue }
            do {
                try await MonotonicTimer.sleep(for: interval)
            } catch {
                return
            }
        }
    }

    /// Queues webhooks for one batch of unnotified invalidations and marks them. - Returns: how many were marked.
    @discardableResult
    func notifyOnce() async -> Int {
        do {
            let batch = try await store.unnotifiedInvalidations(limit: Self.batchSize)
            guard !batch.isEmpty else { return 0 }
            for event in batch {
                if let instance = lookup(event.instanceID), instance.webhook?.invalidationsURL != nil {
                    await send(instance, event)
                }
            }
            try await store.markInvalidationsNotified(batch.map(\.id))
            return batch.count
        } catch {
            logger.debug("Reading the invalidation log failed", ["error": "\(error)"])
            return 0
        }
    }
}
