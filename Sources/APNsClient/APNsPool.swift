import Foundation
import HTTPClient
import Locking
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
    /// The window's slots: how many each connection holds, with the pool's counters and drain callbacks (one lock).
    struct Slots: AdmissionPolicy {
        /// How an admitted `submit` goes on.
        enum Grant: Sendable {
            /// Send the job on this connection (its slot is taken).
            case connection(Int)
            /// The admitter has sent it already (`finished`).
            case dispatched
        }

        let capacity: Int
        var inFlight: [Int]
        var total = 0
        var counters = APNsClientStats()
        /// 200 answers not yet in `counters.responsesByStatus`: counted with an addition per result instead of a
        /// dictionary update (a hash) under the window's lock; `APNsPool.stats()` adds them.
        var accepted = 0
        /// Called once when `total` next reaches 0 (see `whenDrained`).
        var drainWaiters: [@Sendable () -> Void] = []

        mutating func admit() -> Grant? {
            guard total < capacity else { return nil }
            return .connection(leastLoaded(preferring: 0))
        }

        /// Takes a slot on the least loaded connection (ties go to `preferring`).
        mutating func leastLoaded(preferring: Int) -> Int {
            var best = preferring
            for index in inFlight.indices where inFlight[index] < inFlight[best] { best = index }
            inFlight[best] += 1
            total += 1
            return best
        }
    }

    private typealias Window = AdmissionWindow<Slots, APNsJob>

    let key: APNsPoolKey
    /// The key's manager, shared with the key's other pools (so `stats()` leaves token counts to the client, which
    /// counts each manager once); nil for certificate credentials: trust comes with the TLS handshake.
    let tokens: ProviderTokenManager?
    let capacity: Int
    /// Free slots needed before suspended submitters are resumed (see `finished`).
    private let resumeBatch: Int
    private let window: Window
    // Set once in init, before any thread can see the pool.
    nonisolated(unsafe) private var connectionList: [APNsConnection] = []
    private var connections: [APNsConnection] { connectionList }

    /// - Parameter tokens: the key's manager from the client's `ProviderTokenManagers` (shared with the key's other
    ///   pools and the broadcast client); nil for certificate credentials.
    init(
        key: APNsPoolKey, credentials: APNsCredentials, tokens: ProviderTokenManager?,
        configuration: APNsClientConfiguration
    ) throws(CurlError) {
        self.key = key
        let logger = configuration.logger.with(["team": key.teamID, "environment": key.environment.baseURL])
        self.tokens = tokens
        self.capacity = configuration.connectionsPerPool * configuration.streamsPerConnection
        self.resumeBatch = InFlightWindow.resumeBatch(capacity: capacity)
        self.window = Window(
            Slots(
                capacity: capacity,
                inFlight: Array(repeating: 0, count: configuration.connectionsPerPool)))
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
        switch await window.acquire(job, cancelledBy: job.request.retries) {
        case .admitted(.connection(let index)): dispatch(job, to: index)
        case .admitted(.dispatched): break
        case .closed: job.onResult(.failure(.shutdown))
        case .cancelled: job.onResult(.failure(.cancelled(attempts: 0)))
        }
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
            window.withState { $0.policy.counters.retries += 1 }
        case .tokenUpdateRejected:
            window.withState { $0.policy.counters.tokenUpdateRejections += 1 }
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
        let (admitted, drained) = window.withState { state -> ([(Window.Waiter, Int)], [@Sendable () -> Void]) in
            switch result {
            case .response(let response) where response.status == 200: state.policy.accepted += 1
            case .response(let response): state.policy.counters.responsesByStatus[response.status, default: 0] += 1
            case .failure(.transport): state.policy.counters.transportFailures += 1
            case .failure(.configuration): state.policy.counters.configurationFailures += 1
            case .failure(.shutdown): state.policy.counters.shutdownFailures += 1
            case .failure(.invalidRequest): state.policy.counters.invalidRequests += 1
            case .failure(.cancelled), .failure(.expired): break  // the publish counts them (`Cancelled`, `Expired`)
            }
            state.policy.inFlight[index] -= 1
            state.policy.total -= 1
            var drained: [@Sendable () -> Void] = []
            if state.policy.total == 0 {
                drained = state.policy.drainWaiters
                state.policy.drainWaiters = []
            }
            guard !state.isClosed, state.waiting > 0, capacity - state.policy.total >= resumeBatch else {
                return ([], drained)
            }
            var admitted: [(Window.Waiter, Int)] = []
            while state.policy.total < capacity, let waiter = state.popWaiter() {
                admitted.append((waiter, state.policy.leastLoaded(preferring: index)))
            }
            return (admitted, drained)
        }
        for waiter in drained { waiter() }
        var local: APNsJob?
        for (waiter, connection) in admitted {
            if connection == index && local == nil {
                local = waiter.payload
            } else {
                dispatch(waiter.payload, to: connection)
            }
            waiter.admit(.dispatched)
        }
        return local
    }

    /// Stops accepting work and fails every waiting `submit`; returns their requests.
    func beginShutdown() -> [APNsRequest] {
        let waiters = window.withState { state -> [Window.Waiter] in
            let taken = state.close()
            state.policy.counters.shutdownFailures += taken.count
            return taken
        }
        // Each refused `submit` answers its job `.shutdown`.
        for waiter in waiters { waiter.refuse() }
        return waiters.map(\.payload.request)
    }

    /// Calls `body` once every accepted request has its final result: at once if none is in flight, else from the
    /// thread that reports the last one. Keep `body` short.
    func whenDrained(_ body: @escaping @Sendable () -> Void) {
        let now = window.withState { state -> Bool in
            if state.policy.total == 0 { return true }
            state.policy.drainWaiters.append(body)
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
        var stats = window.withState { state -> APNsClientStats in
            var stats = state.policy.counters
            if state.policy.accepted > 0 { stats.responsesByStatus[200, default: 0] += state.policy.accepted }
            stats.requestsInFlight = state.policy.total
            stats.waitingForWindow = state.waiting
            return stats
        }
        stats.pools = 1
        stats.connections = connections.count
        for connection in connections {
            stats.streamsInFlight += connection.gauges.attached.load(ordering: .relaxed)
            stats.connectionsOpened += connection.gauges.opened.load(ordering: .relaxed)
            stats.transfersCreated += connection.gauges.created.load(ordering: .relaxed)
        }
        return stats
    }
}
