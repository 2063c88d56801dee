// swift-tools-version:6.0
// libFuzzer targets for the code that parses untrusted bytes (docs/SECURITY.md, "Fuzzing"). A package of its own so
// that the sanitizer build never touches the main package's build or tests; build and run one with
// `fuzz/run.sh TARGET [SECONDS]`. Each target defines `LLVMFuzzerTestOneInput` and no `main`: libFuzzer, linked in by
// `-sanitize=fuzzer`, supplies it.
//
// The main package is reached through the `push-server` symlink (to `..`) rather than `path: ".."`: SwiftPM names a
// local package after its directory, and a checkout in a directory called `fuzz` would otherwise clash with this one.
import PackageDescription

/// Compiled as a library (no top-level code), so the only entry point is libFuzzer's `main`.
let fuzzSettings: [SwiftSetting] = [.unsafeFlags(["-parse-as-library"])]

func fuzzTarget(_ name: String, _ products: [String]) -> Target {
    .executableTarget(name: name,
                      dependencies: ["FuzzSupport"] + products.map { .product(name: $0, package: "push-server") },
                      swiftSettings: fuzzSettings)
}

let package = Package(
    name: "PushServerFuzz",
    dependencies: [.package(path: "push-server")],
    targets: [
        // The input split into control bytes and the bytes under test, and the fixed intake clock.
        .target(name: "FuzzSupport"),
        // JSONValue parsing with the server's limits; what parses must round-trip through the writer.
        fuzzTarget("JSONFuzz", ["JSON"]),
        // The HTTP/1.1 request parser fed in random read sizes; the split must not change the verdict.
        fuzzTarget("HTTPParserFuzz", ["HTTPServer"]),
        // The certificate extension reader (DERReader, X509Extensions, Apple's topics extension).
        fuzzTarget("DERFuzz", ["TLSIdentity"]),
        // A publish body (interests, users, broadcast channels) to the stored plan, which must read back unchanged.
        fuzzTarget("PublishFuzz", ["BeamsModel", "PushStore", "JSON"]),
        // Device API bodies: registration, token refresh, time zone, interests, Live Activity tokens.
        fuzzTarget("DeviceBodyFuzz", ["BeamsModel", "PushStore", "JSON"]),
    ]
)
