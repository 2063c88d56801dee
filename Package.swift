// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
// The self-hosted push provider. No Swift package dependencies: Foundation, Dispatch and Debian's C libraries.
//
// Layers (each imports only those above it):
//   C shims (CLibCurl, COpenSSL, CSQLite, CLibPQ, CLinux, CBuildInfo), Clocks → Locking, JSON → Logging (→ Lifecycle),
//   HTTPClient (the one libcurl stack) → Tracing (OpenTelemetry over OTLP/HTTP JSON) and JWTSigner (→ TLSIdentity) → {APNsClient, FCMClient, WebPush, HTTPServer, PushStore (+ SQL → StoreSQL) → {SQLiteStore, PostgreSQLStore, InMemoryStore} → StoreCopy} →
//   {BeamsModel (Beams parsers, validators, publish plans), Observability (metrics, health recorders), ConfigModel
//   (instance settings as values)} → PublishEngine (claims, runs, senders' dispatch, webhooks, Beams bridge) →
//   PushServer (Beams APIs, config file, console, CLI, wiring) → push-server (executable). PushStore is the
//   backend-neutral contract (roles, models, errors); a backend imports it, and only StoreCopy (which copies
//   between the two) and PushServer (`Application` opens one, `Config` checks a PostgreSQL connection string) name a
//   backend.
// Access: what crosses targets inside the package is `package` (the tests and bench/swift are targets of it);
//   `public` only for what fuzz/, the one user outside the package, calls, listed with why in scripts/public-api.txt
//   (the PushServer library's only one is the `description` that `BeamsError` needs for a public conformance).
//   `python3 scripts/access-level.py --check` (make access-check, so make check and make test) fails on any other
//   `public`; `--write` demotes them to `package`. On this round's main it took `public` from 3,271 to 110 and
//   `package` from 729 to 3,890; test files with `@testable import`: 99 → 73.
import PackageDescription

let package = Package(
    name: "PushServer",
    products: [
        .executable(name: "push-server", targets: ["push-server"]),
        .library(name: "PushServer", targets: ["PushServer"]),
        // The parsers of untrusted bytes, for the libFuzzer package in fuzz/ (see docs/SECURITY.md, "Fuzzing").
        .library(name: "JSON", targets: ["JSON"]),
        .library(name: "HTTPServer", targets: ["HTTPServer"]),
        .library(name: "TLSIdentity", targets: ["TLSIdentity"]),
        .library(name: "PushStore", targets: ["PushStore"]),
        .library(name: "BeamsModel", targets: ["BeamsModel"]),
    ],
    targets: [
        // MARK: C shims: module maps plus static-inline wrappers for variadic calls and macros.
        .systemLibrary(name: "CLibCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // Header-only: epoll, accept4 and friends that Glibc's Swift module does not export.
        .systemLibrary(name: "CLinux"),
        // Header-only: the weak symbols through which `make` links in the build's commit and date.
        .systemLibrary(name: "CBuildInfo"),

        // MARK: Foundation layers.
        // One monotonic clock for every deadline, timeout and duration, and the one timer facility on it (see
        // MonotonicClock.swift, MonotonicTimer.swift).
        .target(name: "Clocks"),
        // The concurrency kit: the lock the package's synchronisation types are built on, a pthread mutex that
        // ThreadSanitizer understands (see Locked.swift), the waitable state, the admission window, the FIFO, and the
        // blocking queues that dedicated threads wait on. Its timed waits use Clocks' timer.
        .target(name: "Locking", dependencies: ["Clocks"]),
        // One JSON implementation: a strict parser, one value type (`true` apart from `1`, integers apart from
        // doubles) and one deterministic serializer, for every layer from JWTs to Beams bodies.
        .target(name: "JSON"),
        // One lifetime for every long-running part: `Service.run()` until cancelled; `ServiceGroup` stops them in order.
        .target(name: "Lifecycle", dependencies: ["Locking", "Clocks", "Logging"]),
        .target(name: "Logging", dependencies: ["Locking"]),
        .target(name: "JWTSigner", dependencies: ["COpenSSL", "JSON"]),
        // TLS client certificates (APNs certificate authentication): loads a .p12 or PEM pair, checks the key
        // matches, reads validity, subject UID and Apple's topics and environment extensions.
        .target(name: "TLSIdentity", dependencies: ["COpenSSL", "JWTSigner"]),

        // The one HTTP client stack: libcurl setup, error checks, handle owners and the curl multi loop shared with APNsClient, plus
        // the outbound POST client for webhooks with its destination policy (no private addresses, no redirects).
        .target(name: "HTTPClient", dependencies: ["CLibCurl", "Locking", "Clocks"]),
        // OpenTelemetry traces written in-house: W3C trace context, sampling, the batch span processor and the
        // OTLP/HTTP JSON exporter on the HTTPClient stack (docs/OPERATIONS.md, "Traces").
        .target(name: "Tracing", dependencies: ["HTTPClient", "JSON", "Locking", "Clocks", "Logging"]),

        // MARK: Transport and storage layers (know nothing about Beams).
        .target(
            name: "APNsClient",
            dependencies: [
                "CLibCurl", "HTTPClient", "JWTSigner", "JSON", "Logging", "Locking",
                "Clocks", "TLSIdentity",
            ]),
        // FCM HTTP v1: the protocol logic as pure types (service account, OAuth2 assertion and token state, the Beams
        // `fcm` section mapped to a v1 message, answers classified per FCM's error table) and `FCMSender`, which
        // carries them out over the shared libcurl stack, as APNsClient does for APNs.
        .target(name: "FCMClient", dependencies: ["JWTSigner", "JSON", "HTTPClient", "Locking", "Clocks", "Logging"]),
        .target(
            name: "HTTPServer",
            dependencies: [
                "CLinux", "COpenSSL", "JSON", "Logging", "Locking", "Lifecycle",
                "Clocks",
            ]),
        .target(name: "PushStore", dependencies: ["Logging"]),
        // The one SQL layer, no C: bound values, a row decoder, an SQL literal whose interpolations become
        // parameters, and the dialect (placeholders, casts, least/greatest, row locks) that SQLite and PostgreSQL
        // spell differently. Each backend adapts its connection to `SQLConnection`.
        .target(name: "SQL"),
        // The store roles whose statements are the same on SQLite and PostgreSQL (keys, audit log, outboxes, quotas,
        // invalidations, provider tokens, retention), written once over `SQL`; a backend runs them in its own
        // transactions.
        .target(name: "StoreSQL", dependencies: ["SQL", "PushStore", "JSON"]),
        // The SQLite backend: one writer thread with group commit, reader threads, schema migrations.
        .target(
            name: "SQLiteStore",
            dependencies: ["PushStore", "SQL", "StoreSQL", "CSQLite", "JSON", "Logging", "Locking", "Clocks"]),
        // The PostgreSQL backend for several nodes on one database: libpq connections each owned by one of a few
        // dedicated threads, prepared statements, SKIP LOCKED claims with leases, versioned migrations.
        .target(
            name: "PostgreSQLStore",
            dependencies: ["PushStore", "SQL", "StoreSQL", "CLibPQ", "JSON", "Logging", "Locking", "Clocks"]),
        // Web Push: RFC 8291 encryption, VAPID (RFC 8292), subscriptions, answer classification (pure), and
        // `WebPushSender` over the shared libcurl stack with the push-service allowlist and the webhook SSRF rules.
        .target(
            name: "WebPush",
            dependencies: ["COpenSSL", "JWTSigner", "JSON", "HTTPClient", "Locking", "Clocks", "Logging"]),
        // The store contract kept in memory: the fake for unit tests, checked by the same contract suite as SQLite.
        .target(name: "InMemoryStore", dependencies: ["PushStore", "Locking"]),
        // The store move (`push-server copy-store`): every table between SQLite and PostgreSQL, one snapshot in, one
        // transaction out, checked by per-table counts and SHA-256 checksums. The one module that knows both schemas.
        .target(
            name: "StoreCopy",
            dependencies: ["SQLiteStore", "PostgreSQLStore", "PushStore", "SQL", "COpenSSL", "JSON", "Clocks"]),

        // MARK: Beams without a server: the publish request parsers and validators (sections, delivery options,
        // interests, tokens, dates, time zones), `BeamsError` without its HTTP mapping, user tokens and the publish
        // plan the engine reads back from the store. No HTTP server, no store backend, no engine: the fuzzers link it alone.
        .target(
            name: "BeamsModel",
            dependencies: [
                "APNsClient", "FCMClient", "WebPush", "HTTPClient", "JWTSigner", "PushStore",
                "JSON", "Clocks", "Logging",
            ]),
        // What the server measures and reports, without knowing the engine: the metric catalogue and registry
        // (`/metrics`), label sets, batches, and the health recorders the engine feeds (APNs, store, delivery activity).
        .target(
            name: "Observability", dependencies: ["APNsClient", "PushStore", "JSON", "Locking", "Clocks", "Logging"]),

        // The configuration's values below the file that holds them: an instance's settings (`InstanceConfig` with
        // its APNs, FCM, Web Push, UnifiedPush and HMS sections, webhook, Beams bridge, broadcast, quotas, delivery
        // defaults, key scopes, browser origins). Plain values; reading and checking the file stays in PushServer.
        .target(name: "ConfigModel", dependencies: ["PushStore", "FCMClient", "WebPush", "HTTPClient", "TLSIdentity"]),
        // The publish engine: claims queued publishes, streams their targets into the senders (APNs, FCM, Web Push,
        // HMS, APNs broadcast), checkpoints and finishes them, and delivers the webhooks and Beams bridge forwards.
        // It reads instances as `ConfigModel` values and never the app: no config file, no HTTP routes, no CLI.
        .target(
            name: "PublishEngine",
            dependencies: [
                "ConfigModel", "BeamsModel", "Observability", "APNsClient", "FCMClient",
                "WebPush", "HTTPClient", "PushStore", "JWTSigner", "JSON", "Logging",
                "Locking", "Lifecycle", "Clocks", "Tracing",
            ]),

        // MARK: The product: config, Beams APIs, metrics, systemd integration, CLI.
        .target(
            name: "PushServer",
            dependencies: [
                "PublishEngine", "ConfigModel", "BeamsModel", "Observability", "APNsClient", "FCMClient", "WebPush",
                "HTTPClient", "HTTPServer", "PushStore", "SQLiteStore",
                "PostgreSQLStore", "StoreCopy", "JWTSigner", "JSON", "Logging", "Locking", "Lifecycle", "Clocks",
                "CBuildInfo", "CLinux", "TLSIdentity", "Tracing",
            ],
            plugins: ["ConsoleAssetsPlugin"]),
        .executableTarget(name: "push-server", dependencies: ["PushServer"]),
        // The web console's files (console/) compiled into the binary: at build time the plugin has its generator
        // write `ConsoleAssets.swift` (string literals; the favicon as bytes) into the build directory, so console/
        // is the one copy and the server still reads nothing from disk to serve the console.
        .plugin(
            name: "ConsoleAssetsPlugin", capability: .buildTool(), dependencies: ["ConsoleAssetsGenerator"],
            path: "Plugins/ConsoleAssetsPlugin"),
        .executableTarget(name: "ConsoleAssetsGenerator", path: "Plugins/ConsoleAssetsGenerator"),

        // MARK: Test support shared by tests and benchmarks (mock APNs launcher, keys, raw HTTP client, store
        // scenarios that two backends' own tests share).
        .target(
            name: "TestSupport",
            dependencies: ["JWTSigner", "JSON", "Logging", "Locking", "Clocks", "SQL", "PushStore"]),

        // MARK: Benchmarks: executables that print their numbers and method (see bench/ and docs/BENCHMARKS.md).
        // What every benchmark measures and prints alike: process CPU time, the load average, the fan-out tally.
        .target(name: "BenchSupport", path: "bench/swift/BenchSupport"),
        .executableTarget(
            name: "APNsBench", dependencies: ["APNsClient", "BenchSupport", "Clocks", "TestSupport"],
            path: "bench/swift/APNsBench"),
        // What the two store benchmarks measure alike on any `PushStorage` (a publish run's writes, `[run writes]`).
        .target(
            name: "StoreBenchSupport", dependencies: ["BenchSupport", "PushStore"],
            path: "bench/swift/StoreBenchSupport"),
        .executableTarget(
            name: "StoreBench",
            dependencies: ["BenchSupport", "PushStore", "SQLiteStore", "StoreBenchSupport", "Clocks", "TestSupport"],
            path: "bench/swift/StoreBench"),
        // The PostgreSQL store on a throwaway cluster: load, registrations, fan-out streaming, intake.
        .executableTarget(
            name: "PGStoreBench", dependencies: ["PostgreSQLStore", "PushStore", "StoreBenchSupport", "TestSupport"],
            path: "bench/swift/PGStoreBench"),
        .executableTarget(
            name: "WebPushBench", dependencies: ["WebPush", "JWTSigner", "COpenSSL"], path: "bench/swift/WebPushBench"),
        // FCM, Web Push and APNs fan-out through their senders against one local sink (bench/fanout/nginx-sink.sh).
        .executableTarget(
            name: "FanoutBench",
            dependencies: [
                "APNsClient", "BenchSupport", "FCMClient", "WebPush", "HTTPClient", "JSON",
                "JWTSigner", "Clocks", "TestSupport",
            ], path: "bench/swift/FanoutBench"),
        .executableTarget(name: "HTTPBench", dependencies: ["HTTPServer", "JSON"], path: "bench/swift/HTTPBench"),
        // Bulk-loads devices into a store file for the publish benchmarks and the kill -9 check.
        .executableTarget(
            name: "SeedDevices", dependencies: ["PushStore", "SQLiteStore", "TestSupport"],
            path: "bench/swift/SeedDevices"),

        // MARK: Tests mirror the targets.
        .testTarget(name: "LockingTests", dependencies: ["Locking", "Clocks", "TestSupport"]),
        .testTarget(name: "ClocksTests", dependencies: ["Clocks"]),
        .testTarget(name: "SQLTests", dependencies: ["SQL"]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle", "Locking", "Clocks", "Logging"]),
        .testTarget(name: "JWTSignerTests", dependencies: ["JWTSigner", "JSON", "TestSupport"]),
        .testTarget(name: "TLSIdentityTests", dependencies: ["TLSIdentity", "TestSupport"]),
        .testTarget(
            name: "FCMClientTests", dependencies: ["FCMClient", "HTTPClient", "JWTSigner", "JSON", "TestSupport"]),
        .testTarget(name: "TracingTests", dependencies: ["Tracing", "HTTPClient", "JSON"]),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "TestSupport"]),
        .testTarget(
            name: "APNsClientTests",
            dependencies: [
                "APNsClient", "HTTPClient", "JSON", "TestSupport", "Locking",
                "TLSIdentity",
            ]),
        .testTarget(
            name: "HTTPServerTests",
            dependencies: ["HTTPServer", "JSON", "TestSupport", "Lifecycle", "Locking", "Logging"]),
        .testTarget(
            name: "WebPushTests",
            dependencies: ["WebPush", "JWTSigner", "JSON", "HTTPClient", "Locking", "TestSupport"]),
        // The contract suite (Contract/) runs against every backend; SQLiteStoreTests holds what only SQLite has.
        .testTarget(
            name: "PushStoreTests",
            dependencies: [
                "PushStore", "SQLiteStore", "PostgreSQLStore", "InMemoryStore", "StoreSQL",
                "TestSupport", "Locking",
            ]),
        // What only PostgreSQL has: several nodes on one database, connection loss, migrations, query plans.
        .testTarget(
            name: "PostgreSQLStoreTests",
            dependencies: ["PostgreSQLStore", "PushStore", "TestSupport", "Locking"]),
        .testTarget(
            name: "StoreCopyTests",
            dependencies: ["StoreCopy", "SQLiteStore", "PostgreSQLStore", "PushStore", "SQL", "TestSupport"]),
        .testTarget(
            name: "SQLiteStoreTests",
            dependencies: ["SQLiteStore", "PushStore", "SQL", "TestSupport", "Locking"]),
        .testTarget(
            name: "BeamsModelTests",
            dependencies: [
                "BeamsModel", "APNsClient", "FCMClient", "WebPush", "HTTPClient",
                "JWTSigner", "PushStore", "JSON",
            ]),
        .testTarget(name: "ObservabilityTests", dependencies: ["Observability", "APNsClient", "PushStore"]),
        // The engine against `ScriptedStore`, the in-memory store and fake senders: no HTTP server, no config file.
        .testTarget(
            name: "PublishEngineTests",
            dependencies: [
                "PublishEngine", "ConfigModel", "BeamsModel", "Observability",
                "APNsClient", "FCMClient", "WebPush", "HTTPClient", "HTTPServer",
                "PushStore", "InMemoryStore", "SQLiteStore", "JSON", "JWTSigner",
                "Clocks", "Locking", "Logging", "Tracing", "TestSupport",
            ]),
        .testTarget(
            name: "PushServerTests",
            dependencies: [
                "PushServer", "PublishEngine", "ConfigModel", "BeamsModel", "Observability", "SQLiteStore",
                "InMemoryStore", "JSON", "TestSupport",
                "WebPush", "JWTSigner", "FCMClient",
                "Locking", "Clocks", "TLSIdentity", "Tracing",
            ]),
    ]
)
