import Foundation
import Logging
import PushStore

/// The whole server configuration, loaded from one JSON file (see `config.example.json` and
/// `docs/OPERATIONS.md`). Every field has a documented default except `instances`.
public struct ServerConfig: Sendable {
    /// Where the HTTP API listens.
    public struct Listen: Sendable, Equatable {
        /// Default loopback: exposing the API is an explicit decision.
        public var host = "127.0.0.1"
        public var port = 8080
        /// PEM certificate chain and key; when set, the listener speaks only HTTPS (the Python SDK needs it).
        public var tls: TLSFiles?
        /// Event loop threads; 0 means one per core.
        public var eventLoops = 0
        public init() {}
    }

    public struct TLSFiles: Sendable, Equatable {
        public var certificatePath: String
        public var privateKeyPath: String
    }

    /// The embedded SQLite store.
    public struct Storage: Sendable, Equatable {
        public var path = "./data/push.sqlite"
        /// `normal` survives a process crash (kill -9) once a publish is acknowledged; `full` also survives
        /// power loss, at the cost of an fsync per commit group.
        public var synchronous = Synchronous.normal
        /// Days of history kept: ended publishes, reporting events, finished webhooks and devices invalidated by
        /// APNs are deleted after this. 0 keeps everything.
        public var retentionDays = 30
        public init() {}
    }

    public enum Synchronous: String, Sendable, Equatable { case normal, full }

    /// HTTP limits and timeouts; each is explicit so a misbehaving client cannot exhaust the server.
    public struct Limits: Sendable, Equatable {
        public var maxRequestLineBytes = 8 * 1024
        public var maxHeaderBytes = 16 * 1024
        public var maxBodyBytes = 1024 * 1024
        public var maxConnections = 4096
        public var headerTimeoutSeconds = 10
        public var bodyTimeoutSeconds = 30
        public var idleTimeoutSeconds = 60
        public var writeTimeoutSeconds = 30
        /// Publish and customer API requests per second per instance before 429 (Beams: 100).
        public var requestsPerSecondPerInstance = 100
        /// Devices one user may have (Beams: 100); the 101st gets 422.
        public var maxDevicesPerUser = 100
        public init() {}
    }

    /// APNs client tuning (see docs/BENCHMARKS.md for how these were chosen).
    public struct APNsTuning: Sendable, Equatable {
        public var connectionsPerPool = 6
        public var streamsPerConnection = 200
        public var requestTimeoutSeconds = 30
        public var maxAttempts = 5
        public init() {}
    }

    /// The publish engine.
    public struct Engine: Sendable, Equatable {
        /// Publishes processed concurrently; a huge publish never holds small ones back.
        public var concurrentPublishes = 8
        /// Targets read from the store per page.
        public var pageSize = 1000
        /// A crashed node's claimed publish is resumed by another after this long.
        public var leaseSeconds = 30
        public init() {}
    }

    /// The built-in web console at `/console` (see docs/CONSOLE.md).
    public struct WebConsole: Sendable, Equatable {
        /// Off unless enabled: when off, `/console` and the console's JSON endpoints are unknown paths (404).
        public var enabled = false
        /// Test pushes per second per instance before 429 (a burst of as many); each costs an APNs request.
        public var testPushesPerSecond = 5
        public init() {}
    }

    public var listen = Listen()
    public var storage = Storage()
    public var limits = Limits()
    public var apns = APNsTuning()
    public var engine = Engine()
    public var console = WebConsole()
    public var logLevel = LogLevel.info
    public var instances: [InstanceConfig] = []

    public init() {}

    /// The instance with this id (ids are compared case-insensitively: they are UUIDs).
    public func instance(_ id: String) -> InstanceConfig? {
        instances.first { $0.id.caseInsensitiveCompare(id) == .orderedSame }
    }
}

/// One Beams instance: its secret and its APNs credentials.
public struct InstanceConfig: Sendable {
    /// A UUID, as Beams instance ids are (the iOS SDK refuses anything else).
    public var id: String
    /// The secret key backends send as `Authorization: Bearer …`; also the HS256 key for user tokens.
    public var secretKey: String
    public var apns: APNsInstanceConfig?
    /// Instance-level webhooks (`v1.PublishToUsersAttempt`, …), optional.
    public var webhook: WebhookConfig?
}

/// APNs credentials for one instance. Missing credentials are allowed: the instance still accepts devices and
/// publishes, and reports deliveries as not sent.
public struct APNsInstanceConfig: Sendable {
    public var teamID: String
    public var keyID: String
    public var keyPath: String
    /// The app's bundle id; push-type suffixes are added to it.
    public var topic: String
    /// The environment of devices that register without declaring one.
    public var defaultEnvironment: PushEnvironment
    /// Test-only override: send to this base URL (e.g. the mock APNs) instead of Apple.
    public var endpointOverride: String?
    /// CA bundle for `endpointOverride`.
    public var caFile: String?

    /// Whether credentials are present (team, key id and key path all set).
    public var hasCredentials: Bool { !teamID.isEmpty && !keyID.isEmpty && !keyPath.isEmpty }
}

public struct WebhookConfig: Sendable {
    public var url: String
    /// HMAC-SHA1 key for the `Webhook-Signature` header.
    public var secret: String
}
