import Foundation
import PushStore

extension InMemoryState {
    // MARK: Events

    mutating func record(_ events: [ReportingEvent]) throws -> Int {
        let keys = events.map {
            EventKey(instanceID: $0.instanceID, publishID: $0.publishID, kind: $0.kind.rawValue, deviceID: $0.deviceID)
        }
        try requireRoom(for: Set(keys).subtracting(self.events.keys).count)
        var recorded = 0
        for (key, event) in zip(keys, events) where self.events[key] == nil {
            self.events[key] = event.at.stored
            recorded += 1
        }
        return recorded
    }

    func reportFacts(instanceID: String, deviceID: String, publishID: String) -> ReportFacts {
        let stored = ref(instanceID: instanceID, deviceID: deviceID).flatMap { devices[$0] }
        let device = stored?.device
        let publish = jobsByPublishID[InstanceKey(instanceID: instanceID, name: publishID)].flatMap { jobs[$0] }.map {
            job in
            let targets: Bool
            switch job.job.kind {
            case .users: targets = device?.userID.map(job.job.targets.contains) == true
            case .interests: targets = job.job.targets.contains { stored?.interests.contains($0) == true }
            case .channels: targets = false
            }
            return ReportedPublish(
                kind: job.job.kind, createdAt: job.job.createdAt, startedAt: job.startedAt,
                finishedAt: job.finishedAt, targetsDevice: targets)
        }
        return ReportFacts(device: device, publish: publish)
    }

    func statistics(instanceID: String, since: Date) -> InstanceStatistics {
        var statistics = InstanceStatistics()
        for stored in devices.values where stored.device.instanceID == instanceID {
            statistics.devicesByPlatform[stored.device.platform, default: 0] += 1
            if stored.device.invalidatedAt != nil { statistics.invalidDevices += 1 }
        }
        let since = since.millisecondsSince1970
        for stored in jobs.values
        where stored.job.instanceID == instanceID && stored.job.createdAt.millisecondsSince1970 >= since {
            statistics.publishesByState[stored.state, default: 0] += 1
            statistics.counters.add(stored.counters)
        }
        return statistics
    }

    // MARK: Webhooks

    mutating func enqueue(_ request: WebhookRequest, now: Date) throws -> Int64 {
        try requireRoom(for: 1)
        lastWebhookID += 1
        webhooks[lastWebhookID] = StoredWebhook(
            id: lastWebhookID, request: request, nextAttemptAt: now.millisecondsSince1970, createdAt: now.stored)
        return lastWebhookID
    }

    /// Claims due webhooks, oldest due first, hiding each from other callers until the lease ends.
    mutating func due(now: Date, limit: Int, leaseDuration: Duration) -> [PendingWebhook] {
        let hiddenUntil = now.millisecondsSince1970(after: leaseDuration)
        let now = now.millisecondsSince1970
        let due = webhooks.values.filter { $0.state == .pending && $0.nextAttemptAt <= now }
            .sorted { ($0.nextAttemptAt, $0.id) < ($1.nextAttemptAt, $1.id) }
            .prefix(max(0, limit))
        for webhook in due { webhooks[webhook.id]?.nextAttemptAt = hiddenUntil }
        return due.map {
            PendingWebhook(id: $0.id, request: $0.request, attempts: $0.attempts, createdAt: $0.createdAt)
        }
    }

    /// The earliest `nextAttemptAt` of a pending webhook: a retry's time or the end of a claim's lease.
    func nextWebhookDue() -> Date? {
        webhooks.values.lazy.filter { $0.state == .pending }.map(\.nextAttemptAt).min()
            .map { Date(millisecondsSince1970: $0) }
    }

    mutating func mark(_ id: Int64, outcome: WebhookOutcome, now: Date) throws {
        guard var webhook = webhooks[id], webhook.state == .pending else { throw PushStoreError.notFound }
        if case .deferred(let until) = outcome {
            webhook.nextAttemptAt = until.millisecondsSince1970
            webhooks[id] = webhook
            return
        }
        webhook.attempts += 1
        switch outcome {
        case .delivered:
            webhook.state = .delivered
            webhook.finishedAt = now.millisecondsSince1970
            webhook.lastError = nil
        case .retry(let at, let error):
            webhook.nextAttemptAt = at.millisecondsSince1970
            webhook.lastError = error
        case .gaveUp(let error):
            webhook.state = .gaveUp
            webhook.finishedAt = now.millisecondsSince1970
            webhook.lastError = error
        case .deferred:
            break  // handled above
        }
        webhooks[id] = webhook
    }

    // MARK: Provider tokens

    /// Stores `new` unless a token other than `expectedJWT` is stored. - Returns: the token stored afterwards.
    mutating func swapProviderToken(
        teamID: String, keyID: String, expectedJWT: String?, new: ProviderTokenRecord
    ) throws -> ProviderTokenRecord {
        let key = ProviderTokenKey(teamID: teamID, keyID: keyID)
        if let stored = providerTokens[key] {
            if stored.jwt != expectedJWT { return stored }
        } else {
            try requireRoom(for: 1)
        }
        providerTokens[key] = new
        return new
    }

    // MARK: Retention

    /// Deletes up to `limit` rows of each kind of history older than `before`, oldest keys first.
    mutating func purge(before: Date, limit: Int) -> PurgeResult {
        let cutoff = before.millisecondsSince1970
        let limit = max(0, limit)
        var result = PurgeResult()

        let publishes = jobs.values.filter { ($0.finishedAt?.millisecondsSince1970 ?? .max) < cutoff }
            .map(\.id.rawValue).sorted().prefix(limit)
        for id in publishes {
            if let stored = jobs.removeValue(forKey: id) {
                jobsByPublishID[InstanceKey(instanceID: stored.job.instanceID, name: stored.job.publishID)] = nil
            }
        }
        result.publishes = publishes.count

        let oldEvents = events.filter { $0.value.millisecondsSince1970 < cutoff }.keys.prefix(limit)
        for key in oldEvents { events[key] = nil }
        result.events = oldEvents.count

        let oldWebhooks = webhooks.values.filter { ($0.finishedAt ?? .max) < cutoff }.map(\.id).sorted().prefix(limit)
        for id in oldWebhooks { webhooks[id] = nil }
        result.webhooks = oldWebhooks.count

        let deadDevices = devices.values.filter { ($0.device.invalidatedAt?.millisecondsSince1970 ?? .max) < cutoff }
            .map(\.ref).sorted().prefix(limit)
        for ref in deadDevices { remove(ref: ref) }
        result.devices = deadDevices.count
        return result
    }

    mutating func purgeUndeliveredDevices(registeredBefore: Date, limit: Int) -> Int {
        let cutoff = registeredBefore.millisecondsSince1970
        let undelivered = devices.values.filter {
            $0.device.lastRegisteredAt.millisecondsSince1970 < cutoff
                && !(200...299).contains($0.device.lastResult?.status ?? 0)
        }.map(\.ref).sorted().prefix(max(0, limit))
        for ref in undelivered { remove(ref: ref) }
        return undelivered.count
    }
}
