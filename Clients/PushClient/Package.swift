// swift-tools-version:6.0
// A small client for push-server's device API (the Beams device API), for apps that do not use the Beams iOS SDK.
// Foundation only, no dependencies; builds on Apple platforms and on Linux (where its tests run against the real
// server: see Tests/PushClientTests/ServerProcess.swift and the repository's `make test-clients`).
import PackageDescription

let package = Package(
    name: "PushClient",
    platforms: [.iOS(.v13), .macOS(.v10_15), .tvOS(.v13), .watchOS(.v6)],
    products: [
        .library(name: "PushClient", targets: ["PushClient"]),
    ],
    targets: [
        .target(name: "PushClient"),
        .testTarget(name: "PushClientTests", dependencies: ["PushClient"]),
    ]
)
