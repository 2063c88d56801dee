import Clocks
import Dispatch
import Foundation
import HTTPClient
import Locking
import Logging
import Synchronization

/// Sends notifications to APNs over HTTP/2 (libcurl), with provider tokens, Apple's header rules, retries and
/// backpressure.
///
/// ```swift
/// let client = try APNsClient()
/// let result = await client.send(request, credentials: credentials, environment: .production)
/// // fan-out: suspends while the pool's window is full, the callback fires later from a curl thread
/// for request in requests {
///     await client.submit(request, credentials: credentials, environment: .production) { result in record(result) }
/// }
/// let unanswered = await client.shutdown(gracePeriod: .seconds(10))
/// ```
///
/// One pool of connections per (team, key or client certificate, environment); connections open lazily on the first request. Result
/// callbacks run on the curl threads: keep them short (record and return) and never block in them.
package final class APNsClient: Sendable {
    private struct Pools {
        var byKey: [APNsPoolKey: APNsPool] = [:]
        /// The pool the last request went to: a fan-out sends every request to the same one, and comparing its key
        /// (strings that share their storage with the request's) costs less than hashing three strings per request.
        var last: APNsPool?
        var shuttingDown = false
    }

    private let configuration: APNsClientConfiguration
    /// One token manager per (team, key) for every pool of the key, whatever its environment.
    private let tokenManagers: ProviderTokenManagers
    private let pools = Locked(Pools())
    private let invalidRequests = Atomic<Int>(0)

    /// - Throws: `CurlError` when libcurl cannot be initialised or lacks HTTP/2.
    package init(configuration: APNsClientConfiguration = APNsClientConfiguration()) throws(CurlError) {
        try CurlGlobal.ensureInitialised()
        guard CurlGlobal.supportsHTTP2 else {
            throw CurlError(code: -1, call: "curl_version_info", message: "libcurl lacks HTTP/2: \(CurlGlobal.version)")
        }
        self.configuration = configuration
        tokenManagers =
            configuration.tokenManagers
            ?? ProviderTokenManagers(
                policy: configuration.tokenPolicy, store: configuration.tokenStore, clock: configuration.clock,
                logger: configuration.logger)
    }

    /// Sends one notification and waits for its final result (retries included).
    package func send(
        _ request: APNsRequest, credentials: APNsCredentials, environment: APNsEnvironment
    ) async -> APNsResult {
        let result = WaitableState<APNsResult?>(nil)
        await submit(request, credentials: credentials, environment: environment) { answer in
            result.update { $0 = answer }
        }
        // Not cancellable: a cancelled request is answered (`.cancelled`) by the pool, so the callback always comes.
        await result.waitIgnoringCancellation { $0 != nil }
        return result.read { $0! }
    }

    /// Accepts a notification into its pool's in-flight window, suspending while the window is full; returns
    /// as soon as it is accepted. `onResult` fires exactly once with the final result (after retries): on a curl
    /// thread, or on the caller's thread before `submit` returns for a request that breaks a header rule or
    /// arrives after shutdown.
    package func submit(
        _ request: APNsRequest, credentials: APNsCredentials, environment: APNsEnvironment,
        onResult: @escaping @Sendable (APNsResult) -> Void
    ) async {
        let prepared: APNsPreparedRequest
        do {
            prepared = try APNsHeaderRules.prepare(request)
        } catch {
            invalidRequests.add(1, ordering: .relaxed)
            onResult(.failure(.invalidRequest(error)))
            return
        }
        if prepared.pushType.requiresTokenAuthentication && !credentials.supportsTokenOnlyPushTypes {
            invalidRequests.add(1, ordering: .relaxed)
            onResult(.failure(.invalidRequest(.pushTypeNeedsTokenAuthentication(prepared.pushType))))
            return
        }
        let pool: APNsPool
        do {
            guard let found = try self.pool(credentials: credentials, environment: environment) else {
                onResult(.failure(.shutdown))
                return
            }
            pool = found
        } catch {
            onResult(
                .failure(
                    .transport(
                        APNsTransportError(kind: .fatal, code: error.code, message: error.description),
                        attempts: 0)))
            return
        }
        // Both clocks are read only for a request that has a deadline (most have none).
        let deadline = request.retryDeadline.flatMap {
            APNsJob.monotonic($0, wallNow: Date(), monotonicNow: MonotonicClock.now())
        }
        let job = APNsJob(request: request, prepared: prepared, deadline: deadline, onResult: onResult)
        await pool.submit(job)
    }

    /// A snapshot of the counters across pools. Token counts are per key: the sandbox and production pools of a
    /// key share one manager (with the broadcast client too when it shares `tokenManagers`), counted once.
    package func stats() -> APNsClientStats {
        let all = pools.withLock { Array($0.byKey.values) }
        var stats = APNsClientStats()
        var counted = Set<ObjectIdentifier>()
        for pool in all {
            stats.add(pool.stats())
            if let tokens = pool.tokens, counted.insert(ObjectIdentifier(tokens)).inserted {
                stats.tokenRefreshes += tokens.mintCount
                stats.tokensAdopted += tokens.adoptCount
            }
        }
        stats.invalidRequests += invalidRequests.load(ordering: .relaxed)
        return stats
    }

    /// Stops accepting requests, lets in-flight ones finish for up to `gracePeriod`, then aborts the rest
    /// and closes every connection. Every request still unfinished gets `.failure(.shutdown)` through its callback
    /// and is returned here (unsent, waiting for a retry, or sent but unanswered), so the caller can re-queue it.
    package func shutdown(gracePeriod: Duration = .seconds(10)) async -> [APNsRequest] {
        let all = pools.withLock { pools -> [APNsPool] in
            pools.shuttingDown = true
            return Array(pools.byKey.values)
        }
        var unanswered: [APNsRequest] = []
        for pool in all { unanswered += pool.beginShutdown() }
        await Self.waitUntilDrained(all, gracePeriod: gracePeriod)
        for pool in all { unanswered += await pool.stopConnections() }
        return unanswered
    }

    /// Returns once every pool has drained (woken by the pool that reports its last answer) or the grace period
    /// has passed (a real deadline), whichever comes first; a cancelled caller still grants the grace period.
    private static func waitUntilDrained(_ pools: [APNsPool], gracePeriod: Duration) async {
        let undrained = WaitableState(pools.count)
        for pool in pools { pool.whenDrained { undrained.update { $0 -= 1 } } }
        let grace = min(max(.zero, gracePeriod), .seconds(86_400))
        await undrained.wait(until: { $0 <= 0 }, timeout: grace, cancellable: false)
    }

    private func pool(credentials: APNsCredentials, environment: APNsEnvironment) throws(CurlError) -> APNsPool? {
        let key = APNsPoolKey(teamID: credentials.teamID, keyID: credentials.keyID, environment: environment)
        return try pools.withLock { (pools: inout Pools) throws(CurlError) -> APNsPool? in
            if pools.shuttingDown { return nil }
            if let last = pools.last, last.key == key { return last }
            if let pool = pools.byKey[key] {
                pools.last = pool
                return pool
            }
            let pool = try APNsPool(
                key: key, credentials: credentials, tokens: tokenManagers.manager(for: credentials),
                configuration: configuration)
            pools.byKey[key] = pool
            pools.last = pool
            configuration.logger.info(
                "APNs pool created",
                [
                    "team": key.teamID, "key": key.keyID, "environment": environment.baseURL,
                    "connections": String(configuration.connectionsPerPool), "credentials": credentials.kind.rawValue,
                ])
            return pool
        }
    }
}
