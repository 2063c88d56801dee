import ConfigModel
import Foundation
import HTTPClient
import Logging
import PublishEngine
import PushStore
import Tracing

/// The whole server configuration, loaded from one JSON file (see `config.example.json` and
/// `docs/OPERATIONS.md`). Every field has a documented default except `instances`.
package struct ServerConfig: Sendable {
    /// Where the HTTP API listens.
    package struct Listen: Sendable, Equatable {
        /// Default loopback: exposing the API is an explicit decision.
        package var host = "127.0.0.1"
        package var port = 8080
        /// PEM certificate chain and key; when set, the listener speaks only HTTPS (the Python SDK needs it).
        package var tls: TLSFiles?
        /// Event loop threads; 0 means one per core.
        package var eventLoops = 0
        package init() {}
    }

    package struct TLSFiles: Sendable, Equatable {
        package var certificatePath: String
        package var privateKeyPath: String
    }

    /// The store: the embedded SQLite file (default), or a PostgreSQL database shared by several nodes.
    package struct Storage: Sendable, Equatable {
        /// Which backend holds the data. Default `.sqlite`.
        package var backend = StorageBackend.sqlite
        /// The PostgreSQL database; set when `backend` is `.postgresql`.
        package var postgresql: PostgreSQLStorage?
        package var path = "./data/push.sqlite"
        /// `normal` survives a process crash (kill -9) once a publish is acknowledged; `full` also survives
        /// power loss, at the cost of an fsync per commit group.
        package var synchronous = Synchronous.normal
        /// Days of history kept: ended publishes, reporting events, finished webhooks and devices invalidated by
        /// APNs are deleted after this. 0 keeps everything.
        package var retentionDays = 30
        /// Days after which a device that was never delivered to (its latest result is not an acceptance) and has
        /// not registered again is deleted by the janitor: junk registrations do not stay forever. A real app
        /// registers again at its next launch. Default 0: kept. Opt-in, because a device whose latest result was a
        /// failure (credentials missing for a while, say) and whose app is not opened meanwhile is deleted too;
        /// SQLite only (the config refuses it on PostgreSQL, where sharded successes are not recorded per device).
        package var undeliveredDeviceDays = 0
        /// Days the invalidation log (the `devices/invalidations` feed) keeps an event; 0: until the cap.
        package var invalidationRetentionDays = 7
        /// Events the invalidation log keeps per instance at most; the janitor drops the oldest beyond it.
        package var invalidationsPerInstance = 100_000
        /// Days the audit log keeps an entry (docs/OPERATIONS.md, "Many apps: audit log"); 0: forever.
        package var auditRetentionDays = 90
        /// SQLite only: the writer connection's page cache in MiB, the largest share of the store's memory (each
        /// reader keeps SQLite's 2 MiB). It fills with the pages the writer touches, so a node's RSS grows with its
        /// database up to this size and then stays (docs/BENCHMARKS.md, soak). Default 64: large random-key index
        /// inserts (registrations, imports) stay off the disk; 8–16 suits a small host.
        package var sqliteCacheMiB = 64
        /// While the store cannot write (a full disk, …), a continuing outage is logged at most this often.
        package var outageLogIntervalSeconds = 60
        /// The `Retry-After` of the 503 answered while the store cannot write.
        package var outageRetryAfterSeconds = 30
        package init() {}
    }

    package enum Synchronous: String, Sendable, Equatable { case normal, full }

    package enum StorageBackend: String, Sendable, Equatable { case sqlite, postgresql }

    /// `storage.postgresql`: how a node reaches the shared database.
    package struct PostgreSQLStorage: Sendable, Equatable, CustomStringConvertible {
        /// A libpq connection string (`host=… dbname=… user=… sslmode=verify-full …` or a `postgresql://` URI);
        /// a secret (it may hold a password), never logged.
        package var connectionString: String
        /// Connections (each owned by one thread) this node keeps. Default 4.
        package var poolSize = 4
        /// Targets per shard of a large interests publish: a publish whose largest interest has more followers is
        /// split into shards that every node claims, so every node delivers part of it. 0 delivers every publish
        /// whole, on one node. Default 10,000.
        package var shardSize = 10_000

        package init(connectionString: String) { self.connectionString = connectionString }

        /// Without the connection string, which may hold a password.
        package var description: String {
            "PostgreSQLStorage(poolSize: \(poolSize), shardSize: \(shardSize), connectionString: <redacted>)"
        }
    }

    /// HTTP limits and timeouts; each is explicit so a misbehaving client cannot exhaust the server.
    package struct Limits: Sendable, Equatable {
        package var maxRequestLineBytes = 8 * 1024
        package var maxHeaderBytes = 16 * 1024
        package var maxBodyBytes = 1024 * 1024
        package var maxConnections = 4096
        /// Open connections from one client address (IPv6: one /64), TLS handshakes and connections waiting for
        /// their request head included; `trustedProxies` are exempt. 0 = no limit.
        package var maxConnectionsPerAddress = 128
        /// Request-body bytes buffered at once across all connections (one address: an eighth of it); past it a
        /// request gets 503 with `Retry-After` before its body is read.
        package var maxBodyBytesInFlight = 64 << 20
        /// With three quarters of `maxConnections` open, idle keep-alive connections close after this long (at
        /// most `idleTimeoutSeconds`).
        package var idleTimeoutUnderPressureSeconds = 5
        package var headerTimeoutSeconds = 10
        package var bodyTimeoutSeconds = 30
        package var idleTimeoutSeconds = 60
        package var writeTimeoutSeconds = 30
        /// Publish and customer API requests per second per instance before 429 (Beams: 100).
        package var requestsPerSecondPerInstance = 100
        /// Devices one user may have (Beams: 100); binding one more is refused with 400.
        package var maxDevicesPerUser = 100

        // MARK: The internet-facing (no secret) device and reporting APIs; see docs/OPERATIONS.md for the sizing.

        /// Device and reporting API requests per second from one client address (IPv6: one /64); 0 = no limit.
        package var ipRequestsPerSecond = 50
        /// The per-address bucket: this many requests may arrive at once (an app launch sends several).
        package var ipBurst = 500
        /// Interest names per second one client address may send (IPv6: one /64), every element of a
        /// `PUT …/interests` array and each `POST …/interests/{name}`; 0 = no limit (and none while `ipRequestsPerSecond` is 0,
        /// which turns off every per-address limit). The bucket holds
        /// `maxInterestsPerDevice` (5,000), so a device's largest set always passes from a full bucket. Each new name
        /// is a random page of the name index (about 14 KB of WAL and checkpoint writes and 50 µs of the writer,
        /// `bench/abuse/distinct_names.py`), where a registration is a few sequential pages: at the request budget
        /// alone (1 per 10 names) one address could make 500 new names a second (docs/SECURITY.md "Disk").
        package var ipInterestsPerSecond = 100
        /// Device API requests per second per instance, from all addresses together; 0 = no limit.
        package var deviceRequestsPerSecondPerInstance = 5000
        /// Reporting API events per second per instance, from all addresses together; 0 = no limit.
        package var reportsPerSecondPerInstance = 5000
        /// Devices one instance may hold; registering a new token beyond it is refused with 400.
        package var maxDevicesPerInstance = 1_000_000
        /// (device, interest) pairs one instance may hold (10 per device at the device cap); an interest write
        /// beyond it is refused with 400 and stores nothing. Bounds the disk anonymous clients can fill
        /// (docs/SECURITY.md "Disk").
        package var maxSubscriptionsPerInstance = 10_000_000
        /// Distinct interest names one instance may hold (one per device at the device cap), refused like
        /// `maxSubscriptionsPerInstance`.
        package var maxInterestsPerInstance = 1_000_000
        /// The store-side caps on interest writes.
        package var interestLimits: InterestLimits {
            InterestLimits(
                maxSubscriptionsPerInstance: maxSubscriptionsPerInstance,
                maxInterestsPerInstance: maxInterestsPerInstance)
        }
        /// Client addresses each per-address limiter tracks at once; beyond it, new addresses pass unlimited
        /// (per-instance limits still apply) and `push_rate_limit_untracked_total` counts them.
        package var maxTrackedClients = 100_000
        /// Wrong secret keys from one address within `authFailureWindowSeconds` before it is locked out; 0 = off.
        package var authFailuresPerIP = 10
        package var authFailureWindowSeconds = 60
        /// How long a locked-out address gets 429 on the secret-key APIs, whatever key it sends.
        package var authLockoutSeconds = 300
        /// Reverse proxies whose `X-Forwarded-For` names the client (exact addresses). Empty: the socket peer is
        /// the client, so behind a proxy all clients share one address's limits.
        package var trustedProxies: [String] = []
        /// Live Activity push-to-start tokens (one per attributes type) one device may hold.
        package var maxLiveActivityStartTokensPerDevice = 16
        /// Running Live Activities (unexpired update tokens) one device may hold.
        package var maxLiveActivitiesPerDevice = 16
        package init() {}
    }

    /// APNs client tuning (see docs/BENCHMARKS.md for how these were chosen).
    package struct APNsTuning: Sendable, Equatable {
        package var connectionsPerPool = 6
        package var streamsPerConnection = 200
        package var requestTimeoutSeconds = 30
        package var maxAttempts = 5
        package init() {}
    }

    /// Web Push sender tuning, the same for every instance (each instance has its own sender and window).
    package struct WebPushTuning: Sendable, Equatable {
        /// Notifications in flight per instance, retries and their delays included.
        package var maxInFlight = 1024
        /// Notifications in flight per instance to one push service (one `pushServiceHosts` pattern or known
        /// service): what a slow or black-holed service can hold. At most `maxInFlight`.
        package var maxInFlightPerService = 256
        /// TCP + TLS connect bound per attempt.
        package var connectTimeoutSeconds = 3
        /// Deliveries to one subscription in a row that end without an answer (connection failures or timeouts
        /// after the sender's retries) which invalidate it (`SubscriptionUnreachable`), once they span at least
        /// `unreachableAfterSeconds`.
        package var unreachableAfterFailures = 3
        package var unreachableAfterSeconds = 3600
        package init() {}
    }

    /// The publish engine.
    package struct Engine: Sendable, Equatable {
        /// Publishes processed concurrently; a huge publish never holds small ones back.
        package var concurrentPublishes = 8
        /// Slots on top of `concurrentPublishes` that only small publishes (a users publish to at most 10 users)
        /// use: a one-user publish starts while bulk publishes hold every regular slot.
        package var expressPublishSlots = 2
        /// Most publishes parked without a slot at once (a paced publish between its deliveries; each still renews
        /// its lease); beyond it a paced publish keeps its slot while it waits. 0: paced publishes keep their slot.
        package var maxParkedPublishes = 256
        /// Targets read from the store per page.
        package var pageSize = 1000
        /// A crashed node's claimed publish is resumed by another after this long.
        package var leaseSeconds = 30
        /// How far ahead `x_delivery.sendAt` and `expiresAt` may lie, in days.
        package var maxScheduleDays = 30
        /// This node's stable identity in a shared (PostgreSQL) database, the owner of its leases. Set, it is held
        /// exclusively while the node runs (a second process under it fails to start) and a restart resumes what
        /// the previous process under it left running at once, instead of after `leaseSeconds`. Nil:
        /// `node-<host>-<pid>`, new for every process. (SQLite needs none: one process owns the database file.)
        package var nodeID: String?
        package init() {}
    }

    /// Outbound webhooks (per-publish `webhookUrl` and instance webhooks): where they may go and how long and
    /// how much of an answer they wait for.
    package struct Webhooks: Sendable, Equatable {
        /// Hosts and networks webhooks may reach although they are loopback, private, link-local, … (an
        /// internal receiver). Empty by default: only public addresses.
        package var allowedDestinations: [DestinationPolicy.Allowance] = []
        /// The whole attempt, DNS to last byte (Beams: the receiver must answer within 3 s).
        package var timeoutSeconds = 3
        /// DNS plus TCP/TLS connect; at most `timeoutSeconds`.
        package var connectTimeoutSeconds = 2
        /// Response headers plus body; a larger answer aborts the attempt (it then counts as failed).
        package var maxResponseBytes = 64 * 1024
        /// Attempts in flight at most, every destination together.
        package var concurrency = 32
        /// Attempts in flight to one destination (scheme, host, port) at most.
        package var maxConcurrentPerDestination = 4
        /// Timeouts (or connection failures) in a row that open a destination's circuit breaker.
        package var circuitBreakerTimeouts = 3
        /// How long an open breaker records its destination's webhooks as failed attempts without sending,
        /// before one trial attempt.
        package var circuitBreakerSeconds = 30
        package init() {}

        /// The outbox's scheduling settings these values stand for.
        var scheduler: WebhookScheduler<PendingWebhook>.Settings {
            var settings = WebhookScheduler<PendingWebhook>.Settings()
            settings.concurrency = concurrency
            settings.perDestination = maxConcurrentPerDestination
            settings.heldPerDestination = 4 * maxConcurrentPerDestination
            settings.breakerThreshold = circuitBreakerTimeouts
            settings.breakerOpenSeconds = Double(circuitBreakerSeconds)
            return settings
        }

        /// Where webhooks may go (`allowedDestinations` on top of the public addresses).
        package var policy: DestinationPolicy { DestinationPolicy(allowances: allowedDestinations) }

        /// The HTTP client settings these values stand for.
        package var client: HTTPExchangeConfiguration {
            .webhooks(
                policy: policy, timeout: .seconds(timeoutSeconds), connectTimeout: .seconds(connectTimeoutSeconds),
                maxResponseBytes: maxResponseBytes, maxConnectionsPerHost: concurrency)
        }
    }

    /// Who may read `/metrics` and `/ready`'s details. `/health` and `/ready`'s status code are public.
    ///
    /// With neither field set they are served to loopback peers only (and not to requests a proxy forwarded).
    package struct Ops: Sendable, Equatable {
        /// A separate plain-HTTP listener for `/health`, `/ready` and `/metrics` (e.g. `127.0.0.1:9090`); the main
        /// listener then serves neither the metrics nor `/ready`'s details.
        package var listen: Endpoint?
        /// A bearer token an operator's scraper sends (`Authorization: Bearer …`), at least 32 bytes; required on
        /// both listeners when set.
        package var token: String?
        package init() {}
    }

    /// A numeric IPv4 or IPv6 address and a port.
    package struct Endpoint: Sendable, Equatable {
        package var host: String
        package var port: Int
    }

    /// Instance keys (docs/OPERATIONS.md, "Many apps: keys and rotation").
    package struct Keys: Sendable, Equatable {
        /// The key-encryption key (`keys.encryptionKey`, `…Env`, `…File`): rolled Beams secrets are stored sealed
        /// with AES-256-GCM under SHA-256 of this text. Nil: the Beams secret cannot be rolled (scoped keys work).
        package var encryptionKey: String?
        package init() {}
    }

    /// The server's own admin API (docs/API.md, "Server admin API").
    package struct Admin: Sendable, Equatable {
        /// Server-admin keys (`admin.keys` and `PUSH_SERVER_ADMIN_KEYS`); none: the admin API refuses every call.
        package var keys: [AdminKey] = []
        package init() {}
    }

    /// The built-in web console at `/console` (see docs/CONSOLE.md).
    package struct WebConsole: Sendable, Equatable {
        /// Off unless enabled: when off, `/console` and the console's JSON endpoints are unknown paths (404).
        package var enabled = false
        /// Test pushes per second per instance before 429 (a burst of as many); each costs an APNs request.
        package var testPushesPerSecond = 5
        package init() {}
    }

    package var listen = Listen()
    /// Every secret the configuration names and where it lives (`exposureIssues`).
    package var secretSources: [SecretSource] = []
    package var ops = Ops()
    package var storage = Storage()
    package var limits = Limits()
    package var apns = APNsTuning()
    package var webPush = WebPushTuning()
    package var engine = Engine()
    package var webhooks = Webhooks()
    package var console = WebConsole()
    package var keys = Keys()
    package var admin = Admin()
    /// OpenTelemetry traces (`tracing` section and `OTEL_*` variables); off by default.
    package var tracing = TracingConfiguration()
    package var logLevel = LogLevel.info
    package var instances: [InstanceConfig] = []
    /// What each config-file instance was read from (its JSON object, by lower-cased id): a reload rebuilds the
    /// senders of an instance whose object changed, and only those (`InstanceSync`).
    var instanceFingerprints: [String: String] = [:]

    package init() {}

    /// The instance with this id (ids are compared case-insensitively: they are UUIDs).
    package func instance(_ id: String) -> InstanceConfig? {
        instances.first { $0.id.caseInsensitiveCompare(id) == .orderedSame }
    }
}
