import APNsClient
import BeamsModel
import Foundation
import HTTPClient
import HTTPServer
import JWTSigner
import Lifecycle
import Locking
import Logging
import Observability
import PublishEngine
import PushStore
import Tracing

/// The assembled server: store, APNs client, publish engine, webhook outbox and HTTP API.
///
/// `start()` binds the listeners; `run()` runs every part as one `ServiceGroup` until `shutdown()` (or its task's
/// cancellation); the group stops them in order, each drained before the next is told (see `services`); `close()`
/// then closes the store.
package final class Application: Sendable {
    /// Time the whole drain may take beyond the engine's own grace period (for the HTTP listener's in-flight
    /// requests and the rest); past it the group stops waiting and names what did not return.
    static let drainMargin: Duration = .seconds(5)

    package let context: AppContext
    let engine: PublishEngine
    let webhooks: WebhookOutbox
    /// The Beams bridge, when an instance has `beamsBridge` and the backend keeps its outbox.
    let beamsBridge: BeamsBridge?
    let janitor: RetentionJanitor
    let apns: APNsClient
    let http: HTTPServer
    /// The separate listener for `/health`, `/ready` and `/metrics` (`ops.listen`), when configured.
    let opsHTTP: HTTPServer?
    let storeHealth: StoreHealth
    /// The OTLP trace export, when `tracing` is on.
    let tracing: TracingExport?
    /// The instances served now (config-file and run-time), and what keeps it current.
    let directory: InstanceDirectory
    let instanceSync: InstanceSync
    /// Every part above, run as one and stopped in this order, each awaited before the next: the HTTP listener
    /// first (no new work); then the engine (running publishes checkpoint, unanswered notifications return to the
    /// queue, FINISHED webhooks are queued); then the instance sync (the served set stops following the store), the
    /// invalidation notifier (what it has not queued yet is queued
    /// after the restart), webhook delivery, the Beams bridge (when configured), the janitor and the store watchdog; the ops
    /// listener last, so `/health`, `/ready` and `/metrics` answer while the rest drains; then `stopLast`.
    private let services: ServiceGroup
    let logger: Logger
    /// Config reloads so far (`reloadConfig`).
    let reloads = Locked(0)

    /// Opens the store and loads keys; binds nothing yet.
    /// - Parameters:
    ///   - gracePeriod: how long the engine's drain may take (half for answers in flight, half for the APNs client).
    ///   - stopLast: services run with the others and stopped after them (the systemd watchdog).
    /// - Throws: a store or key error, described for the operator.
    package init(
        config: ServerConfig, logger: Logger, gracePeriod: Duration = .seconds(20), stopLast: [any Service] = []
    ) async throws {
        self.logger = logger
        let metrics = Metrics()
        Self.declareMetrics(metrics)
        var senders = PlatformSenderSettings()
        senders.fcm.logger = logger.named("fcm")
        senders.web.logger = logger.named("webpush")
        senders.web.window = config.webPush.maxInFlight
        senders.web.windowPerService = config.webPush.maxInFlightPerService
        senders.web.connectTimeout = Double(config.webPush.connectTimeoutSeconds)
        senders.unreachableAfterFailures = config.webPush.unreachableAfterFailures
        senders.unreachableAfterSeconds = Double(config.webPush.unreachableAfterSeconds)
        let instances = try config.instances.map { try InstanceRuntime(config: $0, senders: senders) }
        let directory = InstanceDirectory(runtimes: instances, fingerprints: config.instanceFingerprints)
        self.directory = directory
        let tracing = try TracingExport.make(
            config.tracing, nodeID: config.engine.nodeID ?? PublishEngine.Settings().workerID,
            metrics: metrics, logger: logger.named("tracing"))
        self.tracing = tracing
        let tracer = tracing?.pipeline.tracer ?? .disabled

        let storeHealth = StoreHealth(
            logInterval: TimeInterval(config.storage.outageLogIntervalSeconds),
            retryAfterSeconds: config.storage.outageRetryAfterSeconds, metrics: metrics, logger: logger.named("store"))
        self.storeHealth = storeHealth
        let store = try await Self.openStore(
            config.storage, nodeID: config.engine.nodeID, logger: logger.named("store"),
            healthEvents: { storeHealth.record($0) })

        // One HMS OAuth token per client for every node on this database and across restarts (Huawei blocks an app
        // asking for more than 1,000 tokens in 5 minutes).
        for instance in instances { instance.hms?.accessTokens.share(through: store) }

        // One provider token per APNs key for the whole process: device pools (sandbox and production) and
        // broadcast calls share these managers, so Apple's per-key refresh floor is met here, not through the store.
        let tokenManagers = ProviderTokenManagers(
            store: PushStoreProviderTokens(store: store),
            logger: logger.named("apns"))
        apns = try APNsClient(
            configuration: APNsClientConfiguration(
                connectionsPerPool: config.apns.connectionsPerPool,
                streamsPerConnection: config.apns.streamsPerConnection,
                requestTimeout: Double(config.apns.requestTimeoutSeconds),
                retryPolicy: APNsRetryPolicy(maxAttempts: config.apns.maxAttempts),
                tokenManagers: tokenManagers, logger: logger.named("apns")))
        webhooks = WebhookOutbox(
            store: store, client: try HTTPExchangeClient(configuration: config.webhooks.client),
            metrics: metrics, logger: logger.named("webhooks"), settings: config.webhooks.scheduler,
            tracer: tracer)
        janitor = RetentionJanitor(
            store: store, retentionDays: config.storage.retentionDays,
            undeliveredDeviceDays: config.storage.undeliveredDeviceDays,
            logger: logger.named("store"), liveActivities: store, invalidations: store,
            invalidationRetentionDays: config.storage.invalidationRetentionDays,
            invalidationsPerInstance: config.storage.invalidationsPerInstance,
            audit: store, auditRetentionDays: config.storage.auditRetentionDays)
        var broadcastConfiguration = APNsBroadcastClient.Configuration()
        broadcastConfiguration.timeout = .seconds(config.apns.requestTimeoutSeconds)
        broadcastConfiguration.tokenManagers = tokenManagers
        broadcastConfiguration.logger = logger.named("apns-broadcast")
        let broadcaster = try APNsBroadcastClient(configuration: broadcastConfiguration)
        var settings = PublishEngine.Settings()
        settings.concurrentPublishes = config.engine.concurrentPublishes
        settings.expressPublishSlots = config.engine.expressPublishSlots
        settings.maxParkedPublishes = config.engine.maxParkedPublishes
        settings.pageSize = config.engine.pageSize
        settings.leaseDuration = .seconds(config.engine.leaseSeconds)
        settings.gracePeriod = max(.zero, gracePeriod)
        settings.shardSize = config.storage.backend == .postgresql ? config.storage.postgresql?.shardSize ?? 0 : 0
        settings.version = BuildInfo.version
        settings.tracer = tracer
        if let nodeID = config.engine.nodeID { settings.workerID = nodeID }
        let liveNodes = Locked(1)
        settings.liveNodesChanged = { count in liveNodes.withLock { $0 = count } }
        let engine = PublishEngine(
            store: store, apns: apns, instances: instances, settings: settings,
            metrics: metrics, logger: logger.named("engine"), webhooks: webhooks,
            broadcaster: broadcaster,
            broadcastRetryPolicy: APNsRetryPolicy(maxAttempts: config.apns.maxAttempts),
            directory: directory)
        self.engine = engine
        // Per-instance budgets, weights and the console's chart follow the served set.
        directory.observe { [engine] snapshot in engine.follow(snapshot.entries.values.map(\.config)) }
        let instanceSync = InstanceSync(
            store: store, directory: directory,
            seal: config.keys.encryptionKey.flatMap { try? SecretSeal(deriving: $0) },
            senders: senders, providerTokens: store, policy: config.webhooks.policy,
            environment: ProcessInfo.processInfo.environment, validateKey: { APNsKeyCheck.problem($0) },
            configInstances: config.instances, fingerprints: config.instanceFingerprints,
            logger: logger.named("instances"), metrics: metrics,
            // PostgreSQL announces each change (NOTIFY) at once; the poll only covers a lost announcement. SQLite
            // has no announcement (a CLI change comes from another process): its poll is the 1-second bound.
            pollInterval: store is any InstanceChangeNotifying ? .seconds(5) : .seconds(1))
        self.instanceSync = instanceSync
        // Runs whenever the backend keeps the outbox: an instance with `beamsBridge` may come at run time or with a
        // reload (idle, it reads the outbox's next due time and sleeps until a forward is queued).
        let bridge = (store as? any BeamsForwardQueue).map {
            BeamsBridge(
                store: $0, publishes: store, instance: { directory.config($0) }, metrics: metrics,
                logger: logger.named("beams-bridge"))
        }
        if let bridge { directory.observe { _ in bridge.instancesChanged() } }
        if config.instances.contains(where: { $0.beamsBridge != nil }) { metrics.declare(.beamsBridge) }
        beamsBridge = bridge
        context = AppContext(
            config: config, store: store, metrics: metrics, logger: logger.named("api"),
            now: { Date() },
            publishEnqueued: {
                engine.wake(); bridge?.forwardQueued()
            },
            cancelRun: { await engine.cancel($0) }, liveNodes: liveNodes,
            beamsForwardQueued: { bridge?.forwardQueued() }, tracer: tracer,
            instanceSync: instanceSync, keepPlan: { [plans = engine.plans] in plans.keep($0, of: $1) })
        // Stored instances are served from the first request.
        do {
            try await instanceSync.refresh()
        } catch {
            logger.warning(
                "Stored instances could not be read at start; they are served once the store answers",
                ["error": "\(error)"])
        }
        // Read every instance's keys once now, so the first requests (and the import route's admission check,
        // which cannot wait for the store) find them.
        let keys = context.keys
        let configured = config.instances
        Task { for instance in configured { _ = try? await keys.reload(instance) } }

        var router = Router()
        let webhooks = self.webhooks
        PublishAPI(app: context).register(into: &router)
        DeviceAPI(app: context).register(into: &router)
        CustomerAPI(app: context).register(into: &router)
        InvalidationFeedAPI(app: context).register(into: &router)
        ReportingAPI(app: context) { event in
            guard let instance = directory.config(event.instanceID) else { return }
            Task { await webhooks.userEvent(instance, event) }
        }.register(into: &router)
        AdminAPI(app: context).register(into: &router)
        DeviceTransferAPI(app: context).register(into: &router)
        KeysAPI(app: context).register(into: &router)
        AuditAPI(app: context).register(into: &router)
        ServerAdminAPI(app: context).register(into: &router)
        ChannelAPI(app: context, instances: directory, broadcaster: broadcaster).register(into: &router)
        let draining = Locked(false)
        let ops = OpsAPI(
            app: context, directory: directory, apns: apns, apnsHealth: engine.apnsHealth,
            storeHealth: storeHealth,
            access: OpsAccess(token: config.ops.token, hasOpsListener: config.ops.listen != nil),
            draining: { draining.withLock { $0 } },
            nodes: store.sharding.map {
                SharedNodes(store: $0, selfID: settings.workerID, liveWithin: settings.nodeLiveWindow)
            })
        ops.register(into: &router, on: .main)
        if config.console.enabled {
            ConsoleAPI(
                app: context, instances: directory, apns: apns, apnsHealth: engine.apnsHealth,
                activity: engine.activity, budgets: engine.budgets
            ).register(into: &router)
        }

        var limits = HTTPLimits()
        limits.maxRequestLineBytes = config.limits.maxRequestLineBytes
        limits.maxHeaderBytes = config.limits.maxHeaderBytes
        limits.maxBodyBytes = config.limits.maxBodyBytes
        limits.maxConnections = config.limits.maxConnections
        limits.maxConnectionsPerAddress = config.limits.maxConnectionsPerAddress
        limits.maxBodyBytesInFlight = config.limits.maxBodyBytesInFlight
        // Never longer than the idle timeout itself.
        limits.idleTimeoutUnderPressure = .seconds(
            min(
                config.limits.idleTimeoutUnderPressureSeconds,
                config.limits.idleTimeoutSeconds))
        // A reverse proxy carries many clients: exempt from the per-address connection limit.
        limits.connectionLimitExemptAddresses = config.limits.trustedProxies
        limits.headerReadTimeout = .seconds(config.limits.headerTimeoutSeconds)
        limits.bodyReadTimeout = .seconds(config.limits.bodyTimeoutSeconds)
        limits.idleTimeout = .seconds(config.limits.idleTimeoutSeconds)
        limits.writeTimeout = .seconds(config.limits.writeTimeoutSeconds)
        let tls = config.listen.tls.map {
            TLSConfiguration(certificateChainPath: $0.certificatePath, privateKeyPath: $0.privateKeyPath)
        }
        let httpConfig = HTTPServerConfiguration(
            host: config.listen.host, port: config.listen.port, tls: tls,
            eventLoopCount: config.listen.eventLoops == 0 ? nil : config.listen.eventLoops, limits: limits)
        let requestMetrics = HTTPRequestMetrics(metrics: metrics)
        let recordRequests: @Sendable ([AccessLogRecord]) -> Void = { requestMetrics.record($0) }
        // A full disk (or another store outage) answers 503 with Retry-After: nothing was stored, try later. The
        // outage is logged once per interval by `StoreHealth`, not once per request.
        let errorResponse: @Sendable (any Error) -> HTTPResponse? = { error in
            (error as? StoreUnavailableError).map(storeHealth.response(for:))
        }
        http = HTTPServer(
            configuration: httpConfig, router: router, logger: logger.named("http"),
            onRequestsCompleted: recordRequests, errorResponse: errorResponse)
        opsHTTP = config.ops.listen.map { endpoint in
            var opsRouter = Router()
            ops.register(into: &opsRouter, on: .ops)
            return HTTPServer(
                configuration: HTTPServerConfiguration(
                    host: endpoint.host, port: endpoint.port, eventLoopCount: 1,
                    limits: limits),
                router: opsRouter, logger: logger.named("ops-http"), onRequestsCompleted: recordRequests,
                errorResponse: errorResponse)
        }
        let apns = self.apns
        let http = self.http
        metrics.addCollector { metrics in
            let stats = apns.stats()
            metrics.set(.apnsStreamsInFlight, to: Double(stats.streamsInFlight))
            metrics.set(.apnsConnections, to: Double(stats.connections))
            metrics.set(.apnsTokenRefreshes, to: Double(stats.tokenRefreshes))
            metrics.set(.apnsTokensAdopted, to: Double(stats.tokensAdopted))
            metrics.set(.apnsTokenUpdateRejections, to: Double(stats.tokenUpdateRejections))
            metrics.set(.apnsRetries, to: Double(stats.retries))
            metrics.set(.httpOpenConnections, to: Double(http.openConnections))
        }
        SenderMetrics.collect(into: metrics, apns: apns, instances: { directory.runtimes })
        metrics.addCollector { metrics in
            let memory = ProcessMemory.current()
            metrics.set(.processResidentBytes, to: Double(memory.residentBytes))
            metrics.set(.processHeapBytes, ["state": "in_use"], to: Double(memory.heapInUseBytes))
            metrics.set(.processHeapBytes, ["state": "mapped"], to: Double(memory.heapMappedBytes))
            metrics.set(.processHeapBytes, ["state": "free"], to: Double(memory.heapFreeBytes))
        }
        Self.collectStoreMemory(config.storage, into: metrics)
        APNsCertificateHealth.collect(into: metrics, instances: { directory.runtimes }, clock: { Date() })
        // Registered last: an instance no longer served (deleted, or removed from the file) takes its series with it
        // (quotas, budgets, estimates, sender gauges), whatever set them last.
        metrics.addCollector { metrics in
            let served = Set(directory.snapshot.entries.keys)
            for label in ["beams_instance", "instance"] {
                metrics.retainSeries(label: label) { served.contains($0.lowercased()) }
            }
        }

        // Follows the served set: a certificate instance may come at run time or with a reload.
        let certificateWatch = CertificateExpiryWatch(instances: { directory.runtimes }, logger: logger.named("apns"))
        directory.observe { _ in certificateWatch.follow() }
        let quotaWatch = (store as? any QuotaUsageReading).map {
            QuotaWatch(
                store: $0, instances: { directory.configs }, watchAlways: !config.admin.keys.isEmpty,
                metrics: metrics, logger: logger.named("quotas"))
        }
        let running: [any Service] =
            [
                http,
                engine,
                instanceSync,
                InvalidationNotifier(store: store, lookup: { directory.config($0) }, logger: logger.named("webhooks")) {
                    [webhooks] instance, event in await webhooks.deviceInvalidated(instance, event)
                },
                webhooks,
            ] + (bridge.map { [$0] } ?? []) + [
                janitor,
                StoreWatchdog(health: storeHealth, store: store),
            ] + (tracing.map { [$0] } ?? []) + [certificateWatch]
            + (quotaWatch.flatMap { $0.isWatching ? [$0] : nil } ?? []) + (opsHTTP.map { [$0] } ?? []) + stopLast
        services = ServiceGroup(
            services: running, gracePeriod: max(.zero, gracePeriod) + Self.drainMargin,
            logger: logger.named("lifecycle"), onStopping: { draining.withLock { $0 = true } })
    }

    /// Declares every metric the server exports on `metrics`, so each one is listed from the first scrape.
    package static func declareMetrics(_ metrics: Metrics) {
        metrics.declare(.httpRequests)
        metrics.declare(.httpRequestDuration)
        metrics.declare(.httpOpenConnections)
        metrics.declare(.processResidentBytes)
        metrics.declare(.processHeapBytes)
        metrics.declare(.publishes)
        metrics.declare(.deviceRegistrations)
        metrics.declare(.reportedEvents)
        metrics.declare(.rateLimited)
        metrics.declare(.rateLimitUntracked)
        metrics.declare(.deviceLimitRefusals)
        metrics.declare(.deviceTokenUpdates)
        metrics.declare(.deviceTokenConflicts)
        metrics.declare(.interestLimitRefusals)
        metrics.declare(.reportedEventsIgnored)
        metrics.declare(.apnsStreamsInFlight)
        metrics.declare(.apnsConnections)
        metrics.declare(.apnsTokenRefreshes)
        metrics.declare(.apnsTokensAdopted)
        metrics.declare(.apnsTokenUpdateRejections)
        metrics.declare(.apnsRetries)
        metrics.declare(.quotaRefusals)
        metrics.declare(.quotaLimit)
        metrics.declare(.quotaUsage)
        metrics.declare(.deliveryBudget)
        metrics.declare(.deliveryBudgetNodeShare)
        metrics.declare(.deliveryBudgetSent)
        SenderMetrics.declare(metrics)
        APNsCertificateHealth.declare(metrics)
        // The usual Prometheus build-info idiom: constant 1, the facts in labels (one series per binary).
        metrics.declare(.configReloadSuccess)
        metrics.declare(.configReloadTimestamp)
        metrics.declare(.storedInstancesVersion)
        metrics.set(.configReloadSuccess, to: 1)
        metrics.set(.configReloadTimestamp, to: Date().timeIntervalSince1970.rounded(.down))
        metrics.declare(.serverBuildInfo)
        metrics.set(.serverBuildInfo, ["version": BuildInfo.version, "commit": BuildInfo.commit], to: 1)
    }

    /// Binds the listener. - Returns: the bound port.
    @discardableResult
    package func start() throws -> Int {
        if let opsHTTP {
            let port = try opsHTTP.start()
            logger.info(
                "Ops listener serving /health, /ready and /metrics",
                ["host": opsHTTP.configuration.host, "port": String(port)])
        }
        let port = try http.start()
        logger.info(
            "Listening",
            [
                "host": context.config.listen.host, "port": String(port),
                "tls": String(context.config.listen.tls != nil), "version": BuildInfo.version,
                "commit": BuildInfo.commit,
            ])
        for instance in directory.runtimes where instance.credentials == nil {
            logger.warning(
                "Instance has no APNs credentials: deliveries are recorded as not sent",
                ["instance": instance.config.id])
        }
        return port
    }

    /// Runs every service until `shutdown()`, the cancellation of the calling task, or a service failing; then
    /// stops them in order and returns.
    /// - Returns: what stopped in which order, what did not return within the grace period, what failed.
    @discardableResult
    package func run() async -> ServiceGroup.Report {
        await services.run()
    }

    /// Starts the drain: `run()` returns once every service stopped (or the grace period ran out). Returns at once;
    /// safe from any thread, any number of times.
    package func shutdown() {
        services.shutdown()
    }

    /// Closes the store (after `run()` returned).
    package func close() async {
        do {
            try await context.store.close()
        } catch {
            logger.error("Closing the store failed", ["error": "\(error)"])
        }
        logger.notice("Stopped")
    }
}
