import APNsClient
import Foundation
import HTTPServer
import Logging
import PushStore

/// The assembled server: store, APNs client, publish engine, webhook outbox and HTTP API.
///
/// `start()` opens everything and binds the listener; `run()` serves until `shutdown()`; shutdown drains in order:
/// stop accepting HTTP requests, stop the engine (running publishes checkpoint; unanswered notifications return
/// to the queue), stop webhooks, close the store.
public final class Application: Sendable {
    public let context: AppContext
    let engine: PublishEngine
    let webhooks: WebhookOutbox
    let janitor: RetentionJanitor
    let apns: APNsClient
    let http: HTTPServer
    let instances: [InstanceRuntime]
    private let logger: Logger

    /// Opens the store and loads keys; binds nothing yet.
    /// - Throws: a store or key error, described for the operator.
    public init(config: ServerConfig, logger: Logger) async throws {
        self.logger = logger
        let metrics = Metrics()
        Self.declareMetrics(metrics)
        instances = try config.instances.map(InstanceRuntime.init)

        let storeDirectory = URL(fileURLWithPath: config.storage.path).deletingLastPathComponent().path
        try FileManager.default.createDirectory(atPath: storeDirectory, withIntermediateDirectories: true)
        var storeConfig = SQLitePushStore.Configuration(path: config.storage.path)
        storeConfig.synchronous = config.storage.synchronous == .full ? .full : .normal
        storeConfig.logger = logger.named("store")
        let store = try await SQLitePushStore.open(storeConfig)

        apns = try APNsClient(configuration: APNsClientConfiguration(
            connectionsPerPool: config.apns.connectionsPerPool, streamsPerConnection: config.apns.streamsPerConnection,
            requestTimeout: Double(config.apns.requestTimeoutSeconds),
            retryPolicy: APNsRetryPolicy(maxAttempts: config.apns.maxAttempts),
            tokenStore: PushStoreProviderTokens(store: store),
            logger: logger.named("apns")))
        webhooks = WebhookOutbox(store: store, metrics: metrics, logger: logger.named("webhooks"))
        janitor = RetentionJanitor(store: store, retentionDays: config.storage.retentionDays, logger: logger.named("store"))
        var settings = PublishEngine.Settings()
        settings.concurrentPublishes = config.engine.concurrentPublishes
        settings.pageSize = config.engine.pageSize
        settings.leaseDuration = .seconds(config.engine.leaseSeconds)
        let engine = PublishEngine(store: store, apns: apns, instances: instances, settings: settings,
                                   metrics: metrics, logger: logger.named("engine"), webhooks: webhooks)
        self.engine = engine
        context = AppContext(config: config, store: store, metrics: metrics, logger: logger.named("api"),
                             publishEnqueued: { engine.wake() })

        var router = Router()
        let webhooks = self.webhooks
        let byID = Dictionary(instances.map { ($0.config.id.lowercased(), $0.config) }, uniquingKeysWith: { a, _ in a })
        PublishAPI(app: context).register(into: &router)
        DeviceAPI(app: context).register(into: &router)
        CustomerAPI(app: context).register(into: &router)
        ReportingAPI(app: context) { event in
            guard let instance = byID[event.instanceID.lowercased()] else { return }
            Task { await webhooks.userEvent(instance, event) }
        }.register(into: &router)
        AdminAPI(app: context).register(into: &router)
        OpsAPI(app: context, instances: instances, apns: apns, apnsHealth: engine.apnsHealth).register(into: &router)

        var limits = HTTPLimits()
        limits.maxRequestLineBytes = config.limits.maxRequestLineBytes
        limits.maxHeaderBytes = config.limits.maxHeaderBytes
        limits.maxBodyBytes = config.limits.maxBodyBytes
        limits.maxConnections = config.limits.maxConnections
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
        http = HTTPServer(configuration: httpConfig, router: router, logger: logger.named("http")) { record in
            metrics.increment("push_http_requests_total", ["route": record.route, "method": record.method,
                                                           "status": String(record.status)])
            metrics.observe("push_http_request_duration_seconds", ["route": record.route],
                            Double(record.duration.components.seconds) + Double(record.duration.components.attoseconds) / 1e18)
        }
        let apns = self.apns
        let http = self.http
        metrics.addCollector { metrics in
            let stats = apns.stats()
            metrics.set("push_apns_streams_in_flight", to: Double(stats.streamsInFlight))
            metrics.set("push_apns_connections", to: Double(stats.connections))
            metrics.set("push_apns_token_refreshes", to: Double(stats.tokenRefreshes))
            metrics.set("push_apns_tokens_adopted", to: Double(stats.tokensAdopted))
            metrics.set("push_apns_token_update_rejections", to: Double(stats.tokenUpdateRejections))
            metrics.set("push_apns_retries", to: Double(stats.retries))
            metrics.set("push_http_open_connections", to: Double(http.openConnections))
        }
    }

    static func declareMetrics(_ metrics: Metrics) {
        metrics.declare("push_http_requests_total", counter: "HTTP requests by route pattern, method and status.")
        metrics.declare("push_http_request_duration_seconds", histogram: "HTTP request latency by route pattern.")
        metrics.declare("push_http_open_connections", gauge: "Open HTTP connections.")
        metrics.declare("push_publishes_total", counter: "Publishes accepted, by kind.")
        metrics.declare("push_device_registrations_total", counter: "Device registrations by platform and result.")
        metrics.declare("push_reported_events_total", counter: "Reporting API events by type.")
        metrics.declare("push_rate_limited_total", counter: "Requests refused with 429.")
        metrics.declare("push_apns_streams_in_flight", gauge: "APNs requests in flight.")
        metrics.declare("push_apns_connections", gauge: "Open APNs HTTP/2 connections.")
        metrics.declare("push_apns_token_refreshes", gauge: "Provider tokens minted since start.")
        metrics.declare("push_apns_tokens_adopted", gauge: "Stored provider tokens reused since start (signed earlier or by another node).")
        metrics.declare("push_apns_token_update_rejections", gauge: "TooManyProviderTokenUpdates answers since start (retried, not final).")
        metrics.declare("push_apns_retries", gauge: "APNs requests retried since start.")
    }

    /// Binds the listener. - Returns: the bound port.
    @discardableResult
    public func start() throws -> Int {
        let port = try http.start()
        logger.info("Listening", ["host": context.config.listen.host, "port": String(port),
                                  "tls": String(context.config.listen.tls != nil), "version": CLI.version])
        for instance in instances where instance.credentials == nil {
            logger.warning("Instance has no APNs credentials: deliveries are recorded as not sent",
                           ["instance": instance.config.id])
        }
        return port
    }

    /// Runs the engine and webhook delivery until `shutdown()` completes.
    public func run() async {
        async let engineDone: Void = engine.run()
        async let webhooksDone: Void = webhooks.run()
        async let janitorDone: Void = janitor.run()
        await http.waitUntilStopped()
        _ = await (engineDone, webhooksDone, janitorDone)
    }

    /// Drains and stops everything within `gracePeriod` seconds.
    public func shutdown(gracePeriod: Double = 20) async {
        logger.notice("Shutting down", ["grace": String(Int(gracePeriod))])
        await http.shutdown()
        await engine.shutdown(gracePeriod: gracePeriod)
        webhooks.stop()
        janitor.stop()
    }

    /// Closes the store (after `run()` returned).
    public func close() async {
        do {
            try await context.store.close()
        } catch {
            logger.error("Closing the store failed", ["error": "\(error)"])
        }
        logger.notice("Stopped")
    }
}
