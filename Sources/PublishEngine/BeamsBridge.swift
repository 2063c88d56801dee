import Clocks
import ConfigModel
import Foundation
import HTTPClient
import Lifecycle
import Locking
import Logging
import Observability
import PushStore

/// The Beams bridge (docs/MIGRATING.md "The bridge"): sends what `BeamsForwardQueue` holds to Pusher Beams (a
/// publish accepted here, replayed to the Beams publish API for the devices that have not moved; a Beams device
/// that moved here, retired at the Beams device API) and records each outcome, which the publish status shows.
///
/// The webhook outbox's pattern, on a table of its own: forwards are queued in the store (a publish's in the
/// transaction that accepts it), claimed with a lease, attempted, marked. Per Beams instance it keeps Beams'
/// 100 requests/s (`BeamsRateWindow`; a forward with no room goes back to the store for a moment, no attempt
/// spent) and pauses after a 429's `Retry-After`. `BeamsForwardPolicy` decides retries. Sent by the project's
/// HTTP client (one `HTTPExchangeClient` per bridged instance and CA file, made at its first forward, so a test
/// stand-in's CA applies to its instance only). Each attempt reads the instance's `beamsBridge` as served then,
/// so an instance created, changed or deleted at run time (or by a reload) is followed. Delivery is at least once:
/// a process killed after Beams took a publish but before the outcome was written sends it again when the lease
/// ends (Beams has no idempotency key).
package final class BeamsBridge: Service {
    /// Forwards claimed at a time, attempted side by side.
    static let batchSize = 32
    /// How long a claimed forward stays hidden from other claims (past it, an unrecorded attempt is made again).
    static let leaseDuration = Duration.seconds(60)
    /// Wait after a store error before asking again.
    static let storeRetryInterval: TimeInterval = 1
    static let longestSleep: TimeInterval = 3600

    package let name = "beams-bridge"
    private let store: any BeamsForwardQueue
    /// Where a forwarded publish's local state is read: a publish cancelled here before its copy went is not sent.
    private let publishes: any PublishQueue
    /// The served instance with an id (case-insensitive), nil when not served.
    private let instance: @Sendable (String) -> InstanceConfig?
    /// Clients by local instance and CA file, kept while that instance is served with its bridge on and that CA
    /// file (`staleClients`), closed at shutdown.
    private let clients = Locked<[ClientKey: HTTPExchangeClient]>([:])
    private let windows = Locked<[String: BeamsRateWindow]>([:])
    private let logger: Logger
    private let metrics: Metrics
    private let wakeups: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    /// - Parameter instance: the served instance with an id (the directory's look-up).
    package init(
        store: any BeamsForwardQueue, publishes: any PublishQueue,
        instance: @escaping @Sendable (String) -> InstanceConfig?, metrics: Metrics, logger: Logger
    ) {
        self.instance = instance
        self.store = store
        self.publishes = publishes
        self.logger = logger
        self.metrics = metrics
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Wakes the loop: a forward was queued.
    package func forwardQueued() { wake.yield() }

    /// Wakes the loop: the served instances changed, so clients of a deleted instance, of a bridge switched off or
    /// of a replaced CA file close now rather than at shutdown.
    package func instancesChanged() { wake.yield() }

    /// What a client is made for: the local instance (lower-cased) and the CA file its bridge names.
    struct ClientKey: Hashable, Sendable {
        var instanceID: String
        var caFile: String?

        init(_ instanceID: String, _ config: BeamsBridgeConfig) {
            self.instanceID = instanceID.lowercased()
            caFile = config.caFile
        }
    }

    /// The keys whose client no longer serves anything: the instance is not served, its bridge is off or gone, or
    /// it names another CA file (a new client is made for that one at its first forward).
    static func staleClients(
        _ keys: some Sequence<ClientKey>,
        served: (String) -> InstanceConfig?
    ) -> [ClientKey] {
        keys.filter { key in
            guard let bridge = served(key.instanceID)?.beamsBridge, bridge.enabled else { return true }
            return ClientKey(key.instanceID, bridge) != key
        }
    }

    /// Closes the clients `staleClients` names. Called between batches, when no attempt holds a client.
    private func closeStaleClients() async {
        let instance = self.instance
        let stale = clients.withLock { clients -> [HTTPExchangeClient] in
            Self.staleClients(clients.keys, served: instance).compactMap { clients.removeValue(forKey: $0) }
        }
        for client in stale { await client.shutdown() }
    }

    // MARK: Delivering

    package func run() async {
        let clients = self.clients
        await withTaskCancellationHandler {
            await deliverUntilCancelled()
        } onCancel: {
            Task { for client in clients.withLock({ Array($0.values) }) { await client.shutdown() } }
        }
        for client in clients.withLock({ Array($0.values) }) { await client.shutdown() }
    }

    /// The instance's client for `config`, made at its first forward. - Throws: a curl error creating it.
    private func client(_ instanceID: String, _ config: BeamsBridgeConfig) throws(CurlError) -> HTTPExchangeClient {
        let key = ClientKey(instanceID, config)
        return try clients.withLock { clients throws(CurlError) -> HTTPExchangeClient in
            if let client = clients[key] { return client }
            let client = try HTTPExchangeClient(
                configuration: HTTPExchangeConfiguration(
                    name: "beams-\(clients.count)", connections: 1, http2: true, httpsOnly: false,
                    caFile: config.caFile,
                    timeout: .seconds(15), connectTimeout: .seconds(5)))
            clients[key] = client
            return client
        }
    }

    private func deliverUntilCancelled() async {
        var woken = wakeups.makeAsyncIterator()
        while !Task.isCancelled {
            await closeStaleClients()
            var nextDue: Date?
            do {
                let due = try await store.dueBeamsForwards(
                    now: Date(), limit: Self.batchSize,
                    leaseDuration: Self.leaseDuration)
                // The shortest wait of the forwards Beams' rate held back, if any.
                let held = await withTaskGroup(of: Double?.self) { group -> Double? in
                    for forward in due { group.addTask { await self.attempt(forward) } }
                    var shortest: Double?
                    for await wait in group { if let wait { shortest = min(shortest ?? wait, wait) } }
                    return shortest
                }
                if let held {
                    // Claiming on would only hold back the rest of a backlog one store write at a time: wait for
                    // room instead.
                    nextDue = Date().addingTimeInterval(held)
                } else if due.count == Self.batchSize {
                    continue
                } else {
                    nextDue = try await store.nextBeamsForwardDue()
                }
            } catch {
                logger.debug("Reading the Beams bridge outbox failed", ["error": "\(error)"])
                nextDue = Date().addingTimeInterval(Self.storeRetryInterval)
            }
            let timer = nextDue.map { wake.wake(at: $0, longest: Self.longestSleep) }
            let event: Void? = await woken.next()
            timer?.cancel()
            if event == nil { return }
        }
    }

    /// One attempt, recorded. - Returns: how long to wait when Beams' rate held it back (nothing was sent).
    private func attempt(_ pending: PendingBeamsForward) async -> Double? {
        let forward = pending.forward
        guard let bridge = instance(forward.instanceID)?.beamsBridge, bridge.enabled else {
            await record(
                pending, .failed(error: "bridge_off: the instance's beamsBridge is switched off or removed; not sent"))
            return nil
        }
        if let problem = BeamsForwardPolicy.sizeProblem(forward) {
            await record(pending, .failed(error: problem))
            return nil
        }
        // A scheduled publish cancelled before its time: its copy is not sent either (a read error sends it).
        if forward.kind.isPublish,
            (try? await publishes.publishStatus(instanceID: forward.instanceID, publishID: forward.key))?.state
                == .cancelled
        {
            await record(pending, .failed(error: "cancelled: the publish was cancelled here before its copy was sent"))
            return nil
        }
        let beamsID = bridge.instanceID.lowercased()
        if let wait = windows.withLock({ $0[beamsID, default: BeamsRateWindow()].take(now: MonotonicClock.seconds()) })
        {
            await record(pending, .deferred(until: Date().addingTimeInterval(wait)))
            return wait
        }
        let client: HTTPExchangeClient
        do {
            client = try self.client(forward.instanceID, bridge)
        } catch {
            await record(
                pending,
                BeamsForwardPolicy.outcome(
                    transportError: "client: \(error)",
                    attempts: pending.attempts, now: Date()))
            return nil
        }
        let outcome: BeamsForwardOutcome
        do {
            let response = try await client.send(try Self.exchange(forward, bridge))
            outcome = BeamsForwardPolicy.outcome(
                kind: forward.kind, status: response.status, body: response.body,
                retryAfter: response.retryAfter, attempts: pending.attempts, now: Date())
            if response.status == 429, let retryAfter = response.retryAfter,
                let seconds = RetryAfter.seconds(retryAfter, now: Int(Date().timeIntervalSince1970))
            {
                windows.withLock {
                    $0[beamsID, default: BeamsRateWindow()].pause(
                        now: MonotonicClock.seconds(),
                        seconds: Double(seconds))
                }
            }
        } catch {
            if error.kind == .shutdown { return nil }  // the lease runs out; attempted again after the restart
            outcome = BeamsForwardPolicy.outcome(
                transportError: "\(error.kind.rawValue): \(error.message)",
                attempts: pending.attempts, now: Date())
        }
        await record(pending, outcome)
        return nil
    }

    /// The request of a forward: a publish POST with the Beams secret, or a device DELETE without credentials.
    static func exchange(_ forward: BeamsForward, _ config: BeamsBridgeConfig) throws(HTTPExchangeError) -> HTTPExchange
    {
        let url =
            forward.kind == .retireDevice
            ? config.deviceURL(key: forward.key) : config.publishURL(users: forward.kind == .publishUsers)
        let target: HTTPURL
        do {
            target = try HTTPURL(url)
        } catch {
            throw HTTPExchangeError(.invalidURL, "the URL \(error)")
        }
        if forward.kind == .retireDevice {
            var exchange = HTTPExchange(url: target, headers: [], body: [])
            exchange.method = .delete
            return exchange
        }
        return HTTPExchange(
            url: target,
            headers: [
                "Authorization: Bearer \(config.secretKey)", "Content-Type: application/json",
                "X-Pusher-Library: push-server-beams-bridge",
            ], body: Array(forward.body))
    }

    private func record(_ pending: PendingBeamsForward, _ outcome: BeamsForwardOutcome) async {
        let fields: KeyValuePairs<String, String> = [
            "instance": pending.forward.instanceID, "kind": pending.forward.kind.rawValue, "key": pending.forward.key,
            "attempt": String(pending.attempts + 1), "outcome": "\(outcome)",
        ]
        let kind = pending.forward.kind.isPublish ? "publish" : "retire"
        switch outcome {
        case .failed:
            logger.warning("Beams bridge forward failed", fields)
            metrics.increment(.beamsBridge, ["kind": kind, "outcome": "failed"])
        case .retry:
            logger.notice("Beams bridge forward will be retried", fields)
            metrics.increment(.beamsBridge, ["kind": kind, "outcome": "retry"])
        case .delivered:
            logger.info("Beams bridge forward delivered", fields)
            metrics.increment(.beamsBridge, ["kind": kind, "outcome": "delivered"])
        case .deferred:
            metrics.increment(.beamsBridge, ["kind": kind, "outcome": "deferred"])
        }
        do {
            try await store.markBeamsForward(pending.id, outcome: outcome, now: Date())
        } catch {
            logger.error("Recording a Beams bridge outcome failed", ["error": "\(error)"])
        }
    }
}
