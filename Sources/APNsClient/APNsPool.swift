import Locking
import Foundation
import HTTPClient
import Logging

/// Identifies a pool: APNs binds a connection to one team (and key kind) on its first push, so each
/// (team, key, environment) gets its own connections.
struct APNsPoolKey: Hashable, Sendable {
    var teamID: String
    var keyID: String
    var environment: APNsEnvironment
}

/// The connections and in-flight window of one (team, key, environment), with the key's token manager (shared
/// with the key's pools in other environments).
///
/// The window (`connections × streamsPerConnection` slots) is the backpressure: a request holds a slot from
/// acceptance until its final result, retries and their delays included. `submit` suspends while the window is
/// full; once a batch of slots is free the longest waiters are admitted in order, each job going to the least
/// loaded connection (ties to the one that freed the slot), so load stays balanced without a scheduler.
///
/// The pool owns the slot accounting; its connections only report (`APNsConnectionReport`) through the closure
/// the pool gives them, and never see the pool itself.
final class APNsPool: Sendable {
    private struct Waiter {
        let job: APNsJob
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var inFlight: [Int]
        var total = 0
        var waiters = WaiterQueue<Waiter>()
        var shuttingDown = false
        var counters = APNsClientStats()
        /// Called once when `total` next reaches 0 (see `whenDrained`).
        var drainWaiters: [@Sendable () -> Void] = []

        var waiting: Int { waiters.count }
    }

    let key: APNsPoolKey
    /// The key's manager, shared with the key's other pools (so `stats()` leaves token counts to the client, which
    /// counts each manager once); nil for certificate credentials: trust comes with the TLS handshake.
    let tokens: ProviderTokenManager?
    let capacity: Int
    /// Free slots needed before suspended submitters are resumed (see `finished`).
    private let resumeBatch: Int
    private let state: Locked<State>
    // Set once in init, before any thread can see the pool.
    nonisolated(unsafe) private var connectionList: [APNsConnection] = []
    private var connections: [APNsConnection] { connectionList }

    /// - Parameter tokens: the key's manager from the client's `ProviderTokenManagers` (shared with the key's other
    ///   pools and the broadcast client); nil for certificate credentials.
    init(key: APNsPoolKey, credentials: APNsCredentials, tokens: ProviderTokenManager?,
         configuration: APNsClientConfiguration) throws(CurlError) {
        self.key = key
        let logger = configuration.logger.with(["team": key.teamID, "environment": key.environment.baseURL])
        self.tokens = tokens
        self.capacity = configuration.connectionsPerPool * configuration.streamsPerConnection
        self.resumeBatch = max(1, min(32, capacity / 16))
        self.state = Locked(State(inFlight: Array(repeating: 0, count: configuration.connectionsPerPool)))
        var list: [APNsConnection] = []
        for index in 0..<configuration.connectionsPerPool {
            // The connection's thread keeps the pool alive through this closure as long as it runs: it reports to it.
            list.append(
                try APNsConnection(
                    index: index, key: key, tokens: tokens, identity: credentials.certificate,
                    configuration: configuration, logger: logger,
                    report: { [self] report in self.connection(index, reported: report) }))
        }
        connectionList = list
        for connection in list { connection.start() }
    }

    /// Accepts `job` into the window, suspending while it is full. A job refused because of shutdown is
    /// answered with `.shutdown`; one whose task or run (`APNsRequest.retries`) is cancelled while it waits leaves
    /// the line and is answered `.cancelled(attempts: 0)`: a cancelled publish does not wait for slots that other
    /// publishes' requests hold.
    func submit(_ job: APNsJob) async {
        enum FirstLook { case admitted(Admission), wait(WaiterQueue<Waiter>.Ticket) }
        let first = state.withLock { state -> FirstLook in
            let admission = Self.admit(&state, capacity: capacity)
            guard case .full = admission else { return .admitted(admission) }
            return .wait(state.waiters.reserve())
        }
        let ticket: WaiterQueue<Waiter>.Ticket
        switch first {
        case .admitted(.connection(let index)):
            return dispatch(job, to: index)
        case .admitted(.rejected), .admitted(.full):
            return job.onResult(.failure(.shutdown))
        case .wait(let reserved):
            ticket = reserved
        }
        let leave: @Sendable () -> Void = { [state] in
            guard let waiter = state.withLock({ $0.waiters.cancel(ticket) }) else { return }
            waiter.job.onResult(.failure(.cancelled(attempts: 0)))
            waiter.continuation.resume()
        }
        let scope = job.request.retries
        let scopeTicket = scope?.wait(onCancel: leave)
        if scope != nil && scopeTicket == nil {
            state.withLock { $0.waiters.settle(ticket) }
            return job.onResult(.failure(.cancelled(attempts: 0)))
        }
        defer { if let scope, let scopeTicket { _ = scope.resume(scopeTicket) } }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Re-check: slots may have freed (or shutdown begun, or the wait been cancelled) since the first look.
                enum Retry { case admission(Admission), cancelled, queued }
                let retry = state.withLock { state -> Retry in
                    if state.waiters.isCancelledEarly(ticket) {
                        state.waiters.settle(ticket)
                        return .cancelled
                    }
                    let admission = Self.admit(&state, capacity: capacity)
                    guard case .full = admission else {
                        state.waiters.settle(ticket)
                        return .admission(admission)
                    }
                    let queued = state.waiters.enqueue(Waiter(job: job, continuation: continuation), ticket: ticket)
                    return queued ? .queued : .cancelled
                }
                switch retry {
                case .admission(.connection(let index)):
                    dispatch(job, to: index)
                    continuation.resume()
                case .admission(.rejected), .admission(.full):
                    job.onResult(.failure(.shutdown))
                    continuation.resume()
                case .cancelled:
                    job.onResult(.failure(.cancelled(attempts: 0)))
                    continuation.resume()
                case .queued:
                    break
                }
            }
        } onCancel: {
            leave()
        }
    }

    private enum Admission { case connection(Int), rejected, full }

    private static func admit(_ state: inout State, capacity: Int) -> Admission {
        if state.shuttingDown { return .rejected }
        guard state.total < capacity, state.waiting == 0 else { return .full }
        return .connection(leastLoaded(&state, preferring: 0))
    }

    private func dispatch(_ job: APNsJob, to index: Int) {
        if !connections[index].enqueue(job) {
            _ = finished(connection: index, result: .failure(.shutdown))
            job.onResult(.failure(.shutdown))
        }
    }

    /// What connection `index` reported from its loop thread.
    private func connection(_ index: Int, reported report: APNsConnectionReport) -> APNsJob? {
        switch report {
        case .finished(let result):
            return finished(connection: index, result: result)
        case .retried:
            state.withLock { $0.counters.retries += 1 }
        case .tokenUpdateRejected:
            state.withLock { $0.counters.tokenUpdateRejections += 1 }
        }
        return nil
    }

    /// A job on connection `index` has its final result: frees its slot. Returns the waiting job that takes over the
    /// freed slot on that same connection, if any; other admitted waiters are dispatched here.
    ///
    /// Waiters are resumed in batches (once `resumeBatch` slots are free), not one per finished request: a fan-out
    /// loop then suspends once per batch instead of once per notification, which saves a cross-thread wake-up
    /// (several µs of CPU) per request at the cost of a window that is a few slots short of full.
    private func finished(connection index: Int, result: APNsResult) -> APNsJob? {
        let (admitted, drained) = state.withLock { state -> ([(Waiter, Int)], [@Sendable () -> Void]) in
            switch result {
            case .response(let response): state.counters.responsesByStatus[response.status, default: 0] += 1
            case .failure(.transport): state.counters.transportFailures += 1
            case .failure(.configuration): state.counters.configurationFailures += 1
            case .failure(.shutdown): state.counters.shutdownFailures += 1
            case .failure(.invalidRequest): state.counters.invalidRequests += 1
            case .failure(.cancelled), .failure(.expired): break  // the publish counts them (`Cancelled`, `Expired`)
            }
            state.inFlight[index] -= 1
            state.total -= 1
            var drained: [@Sendable () -> Void] = []
            if state.total == 0 {
                drained = state.drainWaiters
                state.drainWaiters = []
            }
            guard !state.shuttingDown, state.waiting > 0, capacity - state.total >= resumeBatch else {
                return ([], drained)
            }
            var admitted: [(Waiter, Int)] = []
            while state.total < capacity, let waiter = state.waiters.popFirst() {
                admitted.append((waiter, Self.leastLoaded(&state, preferring: index)))
            }
            return (admitted, drained)
        }
        for waiter in drained { waiter() }
        var local: APNsJob?
        for (waiter, connection) in admitted {
            if connection == index && local == nil {
                local = waiter.job
            } else {
                dispatch(waiter.job, to: connection)
            }
            waiter.continuation.resume()
        }
        return local
    }

    /// Takes a slot on the least loaded connection (ties go to `preferring`).
    private static func leastLoaded(_ state: inout State, preferring: Int) -> Int {
        var best = preferring
        for index in state.inFlight.indices where state.inFlight[index] < state.inFlight[best] { best = index }
        state.inFlight[best] += 1
        state.total += 1
        return best
    }

    /// Stops accepting work and fails every waiting `submit`; returns their requests.
    func beginShutdown() -> [APNsRequest] {
        let waiters = state.withLock { state -> [Waiter] in
            state.shuttingDown = true
            let taken = state.waiters.removeAll()
            state.counters.shutdownFailures += taken.count
            return taken
        }
        for waiter in waiters {
            waiter.job.onResult(.failure(.shutdown))
            waiter.continuation.resume()
        }
        return waiters.map(\.job.request)
    }

    /// Calls `body` once every accepted request has its final result: at once if none is in flight, else from the
    /// thread that reports the last one. Keep `body` short.
    func whenDrained(_ body: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if state.total == 0 { return true }
            state.drainWaiters.append(body)
            return false
        }
        if now { body() }
    }

    /// Aborts whatever is left and stops the connection threads; returns the unanswered requests.
    func stopConnections() async -> [APNsRequest] {
        var unanswered: [APNsRequest] = []
        for connection in connections { unanswered += await connection.stop() }
        return unanswered
    }

    func stats() -> APNsClientStats {
        var stats = state.withLock { state -> APNsClientStats in
            var stats = state.counters
            stats.requestsInFlight = state.total
            stats.waitingForWindow = state.waiting
            return stats
        }
        stats.pools = 1
        stats.connections = connections.count
        for connection in connections {
            stats.streamsInFlight += connection.gauges.attached.load(ordering: .relaxed)
            stats.connectionsOpened += connection.gauges.opened.load(ordering: .relaxed)
        }
        return stats
    }
}
