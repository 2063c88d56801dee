import Foundation
import InMemoryStore
import Locking
import PublishEngine
import PushStore

/// The engine's view of a shared in-memory store, one per engine (node): injects failures per operation, can
/// "crash" (every later call fails, as if the process had died), can hold a page read until the test opens it,
/// can stall every call of an operation (a hung connection), shifts the clock it passes on (a node that sees
/// another's lease as expired), and records what happened.
final class ScriptedStore: PublishQueue, DeviceRegistry {
    enum Operation: Hashable, Sendable {
        case claim, renew, targets, checkpoint, finish, answered
    }

    enum Event: Sendable, Equatable {
        case claimAttempted
        case claimed(attempt: Int)
        case renewed
        case renewFailed(leaseLost: Bool)
        case checkpointed(cursor: Int64, results: Int, answered: [Int64])
        case checkpointFailed(leaseLost: Bool)
        case finished(PublishState)
        case pageRead(after: Int64)
        case subscribersCounted(interest: String)
    }

    struct CrashedError: Error {}

    struct State: Sendable {
        var events: [Event] = []
        var failures: [Operation: [StoreUnavailableError]] = [:]
        var failEvery: [Operation: StoreUnavailableError] = [:]
        var crashed = false
        var gatedCursors: Set<Int64> = []
        var gateWaiters: [Int64: [CheckedContinuation<Void, Never>]] = [:]
        var stalled: Set<Operation> = []
    }

    let base: InMemoryPushStore
    let state = WaitableState(State())
    private let clockOffset: TimeInterval

    init(_ base: InMemoryPushStore, clockOffset: TimeInterval = 0) {
        self.base = base
        self.clockOffset = clockOffset
    }

    var events: [Event] { state.read(\.events) }

    /// The next `count` calls of `operation` throw a store outage.
    func fail(_ operation: Operation, times count: Int) {
        let outage = StoreUnavailableError(.diskFull, detail: "scripted outage")
        state.update { $0.failures[operation, default: []] += Array(repeating: outage, count: count) }
    }

    /// Every call of `operation` throws a store outage until `recover(operation)`.
    func failAlways(_ operation: Operation) {
        state.update { $0.failEvery[operation] = StoreUnavailableError(.diskFull, detail: "scripted outage") }
    }

    func recover(_ operation: Operation) { state.update { $0.failEvery[operation] = nil } }

    /// Every call of `operation` waits, as on a stalled connection, until `unstall(operation)` (then it goes on).
    func stall(_ operation: Operation) { state.update { _ = $0.stalled.insert(operation) } }

    func unstall(_ operation: Operation) { state.update { _ = $0.stalled.remove(operation) } }

    private func passStall(_ operation: Operation) async {
        await state.wait { !$0.stalled.contains(operation) }
    }

    /// This node dies: every later call fails and changes nothing.
    func crash() { state.update { $0.crashed = true } }

    /// The page read after `cursor` waits until `open(after:)`.
    func gate(after cursor: Int64) { state.update { _ = $0.gatedCursors.insert(cursor) } }

    func open(after cursor: Int64) {
        let waiters = state.update { state -> [CheckedContinuation<Void, Never>] in
            state.gatedCursors.remove(cursor)
            return state.gateWaiters.removeValue(forKey: cursor) ?? []
        }
        for waiter in waiters { waiter.resume() }
    }

    func record(_ event: Event) { state.update { $0.events.append(event) } }

    /// Waits until an event matches (a generous safety deadline fails the test instead of hanging it).
    func waitFor(
        _ description: String, file: StaticString = #filePath, line: UInt = #line,
        _ condition: @escaping @Sendable ([Event]) -> Bool
    ) async {
        await waitForState(description, state, file: file, line: line) { condition($0.events) }
    }

    private func check(_ operation: Operation) throws {
        let error = state.update { state -> (any Error)? in
            if state.crashed { return CrashedError() }
            if let always = state.failEvery[operation] { return always }
            if var queue = state.failures[operation], !queue.isEmpty {
                let error = queue.removeFirst()
                state.failures[operation] = queue
                return error
            }
            return nil
        }
        if let error { throw error }
    }

    private func shifted(_ now: Date) -> Date { now.addingTimeInterval(clockOffset) }

    private static func isLeaseLost(_ error: any Error) -> Bool {
        if case PushStoreError.leaseLost = error { return true }
        return false
    }

    // MARK: PublishQueue

    func enqueuePublish(_ job: PublishJob) async throws -> PublishJobID { try await base.enqueuePublish(job) }

    func claimJob(workerID: String, leaseDuration: Duration, now: Date, preference: ClaimPreference) async throws
        -> ClaimedJob?
    {
        record(.claimAttempted)
        try check(.claim)
        let claimed = try await base.claimJob(
            workerID: workerID, leaseDuration: leaseDuration, now: shifted(now),
            preference: preference)
        if let claimed { record(.claimed(attempt: claimed.attempt)) }
        return claimed
    }

    @discardableResult
    func renewLease(_ job: PublishJobID, workerID: String, leaseDuration: Duration, now: Date) async throws -> Bool {
        await passStall(.renew)
        do {
            try check(.renew)
            let cancelRequested = try await base.renewLease(
                job, workerID: workerID, leaseDuration: leaseDuration,
                now: shifted(now))
            record(.renewed)
            return cancelRequested
        } catch {
            record(.renewFailed(leaseLost: Self.isLeaseLost(error)))
            throw error
        }
    }

    func targets(for job: PublishJob, after cursor: Int64, limit: Int) async throws -> TargetPage {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let gated = state.update { state -> Bool in
                guard state.gatedCursors.contains(cursor) else { return false }
                state.gateWaiters[cursor, default: []].append(continuation)
                return true
            }
            if !gated { continuation.resume() }
        }
        try check(.targets)
        let page = try await base.targets(for: job, after: cursor, limit: limit)
        record(.pageRead(after: cursor))
        return page
    }

    func checkpoint(
        _ job: PublishJobID, workerID: String, cursor: Int64, counters: PublishCounters,
        deviceResults: [DeviceResult], answered: [Int64]
    ) async throws {
        do {
            try check(.checkpoint)
            try await base.checkpoint(
                job, workerID: workerID, cursor: cursor, counters: counters,
                deviceResults: deviceResults, answered: answered)
            record(.checkpointed(cursor: cursor, results: deviceResults.count, answered: answered.sorted()))
        } catch {
            record(.checkpointFailed(leaseLost: Self.isLeaseLost(error)))
            throw error
        }
    }

    func answeredTargets(_ job: PublishJobID) async throws -> Set<Int64> {
        try check(.answered)
        return try await base.answeredTargets(job)
    }

    func finishJob(
        _ job: PublishJobID, workerID: String, state: PublishState, targetsTotal: Int64?, summary: String?,
        now: Date
    ) async throws {
        try check(.finish)
        try await base.finishJob(
            job, workerID: workerID, state: state, targetsTotal: targetsTotal, summary: summary,
            now: shifted(now))
        record(.finished(state))
    }

    func publishStatus(instanceID: String, publishID: String) async throws -> PublishStatus? {
        try await base.publishStatus(instanceID: instanceID, publishID: publishID)
    }

    func recentPublishes(instanceID: String, limit: Int) async throws -> [PublishStatus] {
        try await base.recentPublishes(instanceID: instanceID, limit: limit)
    }

    func queueDepth() async throws -> Int { try await base.queueDepth() }

    func nextPublishDue(now: Date) async throws -> Date? {
        try check(.claim)
        return try await base.nextPublishDue(now: shifted(now))
    }

    func rescheduleJob(_ job: PublishJobID, workerID: String, notBefore: Date) async throws {
        try check(.finish)
        try await base.rescheduleJob(job, workerID: workerID, notBefore: notBefore)
    }

    func cancelPublish(instanceID: String, publishID: String, now: Date, audit: AuditEntry?) async throws
        -> PublishCancellation?
    {
        try await base.cancelPublish(instanceID: instanceID, publishID: publishID, now: now)
    }

    // MARK: DeviceRegistry (passed through)

    func registerDevice(_ registration: DeviceRegistration, maxDevicesPerInstance: Int) async throws -> RegisteredDevice
    {
        try await base.registerDevice(registration, maxDevicesPerInstance: maxDevicesPerInstance)
    }

    func registerDevices(_ registrations: [DeviceRegistration]) async throws -> [RegisteredDevice] {
        try await base.registerDevices(registrations)
    }

    func device(instanceID: String, id: String) async throws -> Device? {
        try await base.device(instanceID: instanceID, id: id)
    }

    func deviceRef(instanceID: String, id: String) async throws -> Int64? {
        try await base.deviceRef(instanceID: instanceID, id: id)
    }

    func device(instanceID: String, platform: Platform, token: String) async throws -> Device? {
        try await base.device(instanceID: instanceID, platform: platform, token: token)
    }

    func deleteDevice(instanceID: String, id: String) async throws -> Bool {
        try await base.deleteDevice(instanceID: instanceID, id: id)
    }

    func updateTimeZone(instanceID: String, deviceID: String, timeZone: String?) async throws -> Bool {
        try await base.updateTimeZone(instanceID: instanceID, deviceID: deviceID, timeZone: timeZone)
    }

    func updateMetadata(instanceID: String, deviceID: String, metadata: String) async throws -> Bool {
        try await base.updateMetadata(instanceID: instanceID, deviceID: deviceID, metadata: metadata)
    }

    func updateToken(instanceID: String, deviceID: String, platform: Platform, token: String) async throws -> Bool {
        try await base.updateToken(instanceID: instanceID, deviceID: deviceID, platform: platform, token: token)
    }

    func interests(instanceID: String, deviceID: String, limit: Int, cursor: String?) async throws -> InterestPage? {
        try await base.interests(instanceID: instanceID, deviceID: deviceID, limit: limit, cursor: cursor)
    }

    func setInterests(instanceID: String, deviceID: String, interests: [String], limits: InterestLimits) async throws
        -> Bool
    {
        try await base.setInterests(instanceID: instanceID, deviceID: deviceID, interests: interests, limits: limits)
    }

    func addInterest(instanceID: String, deviceID: String, interest: String, limits: InterestLimits) async throws
        -> Bool
    {
        try await base.addInterest(instanceID: instanceID, deviceID: deviceID, interest: interest, limits: limits)
    }

    func removeInterest(instanceID: String, deviceID: String, interest: String) async throws -> Bool {
        try await base.removeInterest(instanceID: instanceID, deviceID: deviceID, interest: interest)
    }

    func subscriberCount(instanceID: String, interest: String) async throws -> Int {
        record(.subscribersCounted(interest: interest))
        return try await base.subscriberCount(instanceID: instanceID, interest: interest)
    }

    func setUser(instanceID: String, deviceID: String, userID: String, maxDevicesPerUser: Int) async throws
        -> SetUserResult
    {
        try await base.setUser(
            instanceID: instanceID, deviceID: deviceID, userID: userID,
            maxDevicesPerUser: maxDevicesPerUser)
    }

    func deleteUser(instanceID: String, userID: String, audit: AuditEntry?) async throws -> Int {
        try await base.deleteUser(instanceID: instanceID, userID: userID)
    }

    func devices(instanceID: String, userID: String) async throws -> [Device] {
        try await base.devices(instanceID: instanceID, userID: userID)
    }
}
