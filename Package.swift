// swift-tools-version:6.0
// The self-hosted push provider. No Swift package dependencies: Foundation, Dispatch and Debian's C libraries.
//
// Layers (each imports only those above it):
//   C shims (CLibCurl, COpenSSL, CSQLite, CLinux, CBuildInfo) → Locking → Logging (→ Lifecycle), HTTPClient (the one
//   libcurl stack)
//   → JWTSigner → {APNsClient, HTTPServer, PushStore} → PushServer (Beams APIs, publish engine) → push-server (executable)
import PackageDescription

let package = Package(
    name: "PushServer",
    products: [
        .executable(name: "push-server", targets: ["push-server"]),
        .library(name: "PushServer", targets: ["PushServer"]),
    ],
    targets: [
        // MARK: C shims: module maps plus static-inline wrappers for variadic calls and macros.
        .systemLibrary(name: "CLibCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // Header-only: epoll, accept4 and friends that Glibc's Swift module does not export.
        .systemLibrary(name: "CLinux"),
        // Header-only: the weak symbols through which `make` links in the build's commit and date.
        .systemLibrary(name: "CBuildInfo"),

        // MARK: Foundation layers.
        // One lock type for every layer: a pthread mutex that ThreadSanitizer understands (see Locked.swift), and the
        // blocking queue that dedicated threads wait on.
        .target(name: "Locking"),
        // One lifetime for every long-running part: `Service.run()` until cancelled; `ServiceGroup` stops them in order.
        .target(name: "Lifecycle", dependencies: ["Locking", "Logging"]),
        .target(name: "Logging", dependencies: ["Locking"]),
        .target(name: "JWTSigner", dependencies: ["COpenSSL"]),

        // The one HTTP client stack: libcurl setup, error checks and handle owners shared with APNsClient, plus
        // the outbound POST client for webhooks with its destination policy (no private addresses, no redirects).
        .target(name: "HTTPClient", dependencies: ["CLibCurl", "Locking"]),

        // MARK: Transport and storage layers (know nothing about Beams).
        .target(name: "APNsClient", dependencies: ["CLibCurl", "HTTPClient", "JWTSigner", "Logging", "Locking"]),
        .target(name: "HTTPServer", dependencies: ["CLinux", "COpenSSL", "Logging", "Locking", "Lifecycle"]),
        .target(name: "PushStore", dependencies: ["CSQLite", "Logging", "Locking"]),

        // MARK: The product: config, Beams APIs, publish engine, metrics, systemd integration.
        .target(name: "PushServer", dependencies: ["APNsClient", "HTTPClient", "HTTPServer", "PushStore", "JWTSigner", "Logging",
                                                  "Locking", "Lifecycle", "CBuildInfo"]),
        .executableTarget(name: "push-server", dependencies: ["PushServer"]),

        // MARK: Test support shared by tests and benchmarks (mock APNs launcher, keys, raw HTTP client).
        .target(name: "TestSupport", dependencies: ["JWTSigner", "Logging"]),

        // MARK: Benchmarks: executables that print their numbers and method (see bench/ and docs/BENCHMARKS.md).
        .executableTarget(name: "APNsBench", dependencies: ["APNsClient", "TestSupport"], path: "bench/swift/APNsBench"),
        .executableTarget(name: "StoreBench", dependencies: ["PushStore", "TestSupport"], path: "bench/swift/StoreBench"),
        .executableTarget(name: "HTTPBench", dependencies: ["HTTPServer"], path: "bench/swift/HTTPBench"),
        // Bulk-loads devices into a store file for the publish benchmarks and the kill -9 check.
        .executableTarget(name: "SeedDevices", dependencies: ["PushStore", "TestSupport"], path: "bench/swift/SeedDevices"),

        // MARK: Tests mirror the targets.
        .testTarget(name: "LifecycleTests", dependencies: ["Lifecycle", "Locking", "Logging"]),
        .testTarget(name: "JWTSignerTests", dependencies: ["JWTSigner", "TestSupport"]),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "TestSupport"]),
        .testTarget(name: "APNsClientTests", dependencies: ["APNsClient", "HTTPClient", "TestSupport", "Locking"]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"]),
        .testTarget(name: "PushStoreTests", dependencies: ["PushStore", "TestSupport"]),
        .testTarget(name: "PushServerTests", dependencies: ["PushServer", "TestSupport", "Locking"]),
    ]
)
