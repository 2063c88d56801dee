import Foundation
import PushStore

extension InMemoryState {
    mutating func enqueue(_ job: PublishJob) throws -> PublishJobID {
        let key = InstanceKey(instanceID: job.instanceID, name: job.publishID)
        if jobsByPublishID[key] != nil { throw PushStoreError.duplicatePublish(publishID: job.publishID) }
        try requireRoom(for: 1)
        if let quota = job.dailyPublishQuota {
            let day = InstanceKey(instanceID: job.instanceID, name: UTCDay(containing: job.createdAt).number)
            if publishDayCounts[day, default: 0] >= Int64(quota) { throw PushStoreError.publishQuotaReached }
            publishDayCounts[day, default: 0] += 1
            publishDayCounts = publishDayCounts.filter {
                $0.key.instanceID != job.instanceID || $0.key.name >= day.name - 1
            }
        }
        lastJobID += 1
        var job = job
        job.dailyPublishQuota = nil
        job.createdAt = job.createdAt.stored
        job.notBefore = job.notBefore?.stored
        let id = PublishJobID(rawValue: lastJobID)
        jobs[lastJobID] = StoredJob(id: id, job: job)
        jobsByPublishID[key] = lastJobID
        return id
    }

    mutating func claim(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference)
        -> ClaimedJob?
    {
        let expires = now.millisecondsSince1970(after: leaseDuration)
        let now = now.millisecondsSince1970
        // A job that is queued or whose worker's lease ran out: of the instance with the fewest runs on the
        // claiming node, the oldest.
        let claimable = jobs.values.filter { stored in
            ((stored.state == .queued && (stored.job.notBefore?.millisecondsSince1970 ?? .min) <= now)
                || (stored.state == .running && (stored.leaseExpiresAt ?? .min) <= now))
                && preference.admits(stored.job.instanceID)
        }
        guard
            var stored = claimable.min(by: {
                (preference.rank(of: $0.job.instanceID), $0.id.rawValue)
                    < (preference.rank(of: $1.job.instanceID), $1.id.rawValue)
            })
        else { return nil }
        stored.state = .running
        stored.leaseOwner = workerID
        stored.leaseExpiresAt = expires
        stored.startedAt = stored.startedAt ?? Date(millisecondsSince1970: now)
        stored.attempts += 1
        jobs[stored.id.rawValue] = stored
        return ClaimedJob(
            id: stored.id, job: stored.job, cursor: stored.cursor, counters: stored.counters, attempt: stored.attempts,
            leaseExpiresAt: Date(millisecondsSince1970: stored.leaseExpiresAt ?? now),
            cancelRequested: stored.cancelRequested)
    }

    /// The job, if `workerID` holds its lease; `leaseLost` otherwise. An expired lease nobody took over still holds.
    func leased(_ job: PublishJobID, workerID: String) throws -> StoredJob {
        guard let stored = jobs[job.rawValue], stored.state == .running, stored.leaseOwner == workerID else {
            throw PushStoreError.leaseLost(job)
        }
        return stored
    }

    mutating func renewLease(_ job: PublishJobID, workerID: String, leaseDuration: Duration, now: Date) throws -> Bool {
        var stored = try leased(job, workerID: workerID)
        stored.leaseExpiresAt = now.millisecondsSince1970(after: leaseDuration)
        jobs[job.rawValue] = stored
        return stored.cancelRequested
    }

    mutating func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters, deviceResults: [DeviceResult],
        answered: [Int64]
    ) throws {
        var stored = try leased(job, workerID: workerID)
        stored.cursor = max(stored.cursor, cursor)
        stored.answered.formUnion(answered.filter { $0 > cursor })
        stored.answered = stored.answered.filter { $0 > cursor }
        // Wrapping, never trapping (`PublishCounters.add`): a hostile sum cannot crash the process.
        stored.counters.add(counters.nonZero)
        jobs[job.rawValue] = stored
        apply(deviceResults)
    }

    mutating func finish(
        _ job: PublishJobID, workerID: String, state: PublishState, targetsTotal: Int64?, summary: String?, now: Date
    ) throws {
        precondition(state.isFinal, "finishJob needs a final state")
        var stored = try leased(job, workerID: workerID)
        stored.state = state
        stored.finishedAt = now.stored
        stored.targetsTotal = targetsTotal
        stored.summary = summary
        stored.leaseOwner = nil
        stored.leaseExpiresAt = nil
        stored.answered = []
        jobs[job.rawValue] = stored
    }

    func answeredTargets(_ job: PublishJobID) -> Set<Int64> { jobs[job.rawValue]?.answered ?? [] }

    func status(_ stored: StoredJob) -> PublishStatus {
        var delivered = 0
        var opened = 0
        for key in events.keys where key.instanceID == stored.job.instanceID && key.publishID == stored.job.publishID {
            if key.kind == ReportingEvent.Kind.delivery.rawValue { delivered += 1 }
            if key.kind == ReportingEvent.Kind.open.rawValue { opened += 1 }
        }
        return PublishStatus(
            id: stored.id, instanceID: stored.job.instanceID, publishID: stored.job.publishID, kind: stored.job.kind,
            state: stored.state, counters: stored.counters, targetsTotal: stored.targetsTotal, summary: stored.summary,
            attempts: stored.attempts, createdAt: stored.job.createdAt, startedAt: stored.startedAt,
            finishedAt: stored.finishedAt, delivered: delivered, opened: opened, notBefore: stored.job.notBefore,
            cancelRequested: stored.cancelRequested)
    }

    func publishStatus(instanceID: String, publishID: String) -> PublishStatus? {
        jobsByPublishID[InstanceKey(instanceID: instanceID, name: publishID)].flatMap { jobs[$0] }.map(status)
    }

    /// Newest first.
    func recentPublishes(instanceID: String, limit: Int) -> [PublishStatus] {
        jobs.values.filter { $0.job.instanceID == instanceID }
            .sorted { ($0.job.createdAt, $0.id.rawValue) > ($1.job.createdAt, $1.id.rawValue) }
            .prefix(max(0, limit)).map(status)
    }

    var queueDepth: Int { jobs.values.count { $0.state == .queued || $0.state == .running } }

    // MARK: Scheduling and cancelling

    func nextPublishDue(now: Date) -> Date? {
        let now = now.millisecondsSince1970
        return jobs.values.lazy.filter { $0.state == .queued }.compactMap(\.job.notBefore)
            .filter { $0.millisecondsSince1970 > now }.min()
    }

    mutating func reschedule(_ job: PublishJobID, workerID: String, notBefore: Date) throws {
        var stored = try leased(job, workerID: workerID)
        stored.state = .queued
        stored.job.notBefore = notBefore.stored
        stored.cursor = 0
        stored.answered = []
        stored.leaseOwner = nil
        stored.leaseExpiresAt = nil
        jobs[job.rawValue] = stored
    }

    mutating func cancel(instanceID: String, publishID: String, now: Date) -> PublishCancellation? {
        guard let id = jobsByPublishID[InstanceKey(instanceID: instanceID, name: publishID)],
            var stored = jobs[id]
        else { return nil }
        switch stored.state {
        case .queued:
            stored.state = .cancelled
            stored.finishedAt = now.stored
            stored.answered = []
            jobs[id] = stored
            return .cancelled(status(stored))
        case .running:
            stored.cancelRequested = true
            jobs[id] = stored
            return .running(stored.id)
        case .finished, .failed, .cancelled, .expired:
            return .alreadyEnded(status(stored))
        }
    }

    // MARK: Targets

    func targets(for job: PublishJob, after cursor: Int64, limit: Int) -> TargetPage {
        let limit = max(1, limit)
        switch job.kind {
        case .interests:
            var refs = Set<Int64>()
            for name in Set(job.targets) {
                refs.formUnion(followers[InstanceKey(instanceID: job.instanceID, name: name)] ?? [])
            }
            let after = refs.filter { $0 > cursor }.sorted()
            var targets: [Target] = []
            var examined = cursor
            var index = 0
            // Invalidated devices are looked at (the cursor passes them) but not delivered to.
            while index < after.count && targets.count < limit {
                examined = after[index]
                if let stored = devices[examined], stored.device.invalidatedAt == nil { targets.append(target(stored)) }
                index += 1
            }
            return TargetPage(targets: targets, cursor: examined, isLast: index == after.count)
        case .users:
            var refs = Set<Int64>()
            for user in Set(job.targets) {
                refs.formUnion(devicesByUser[InstanceKey(instanceID: job.instanceID, name: user)] ?? [])
            }
            let valid = refs.filter { $0 > cursor && devices[$0]?.device.invalidatedAt == nil }.sorted()
            let targets = valid.prefix(limit).compactMap { devices[$0].map(target) }
            return TargetPage(targets: targets, cursor: targets.last?.ref ?? cursor, isLast: valid.count <= limit)
        case .channels:
            return TargetPage(targets: [], cursor: cursor, isLast: true)
        }
    }

    private func target(_ stored: StoredDevice) -> Target {
        let device = stored.device
        return Target(
            ref: stored.ref, deviceID: device.id, platform: device.platform, token: device.token,
            environment: device.environment, environmentDeclared: device.environmentDeclared,
            lastRegisteredAt: device.lastRegisteredAt, userID: device.userID, timeZone: device.timeZone)
    }
}
