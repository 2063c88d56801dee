import Foundation
import PushStore
import SQLiteStore
import TestSupport

// Bulk-loads N devices of one platform following one interest into a push-server database, through the store's own
// API (the same code path as registration), so benchmarks can start the server on a large registry in seconds.
//
//   SeedDevices --db PATH --instance UUID --interest NAME --count N [--environment sandbox|production] [--seed S]
//               [--platform apns|fcm|web|unifiedpush|hms] [--endpoint https://host:port/path/]
//
// APNs tokens are hex; FCM and HMS tokens are printable text; a web or UnifiedPush device is the canonical
// subscription JSON with an endpoint of `--endpoint` followed by the token's hex and one fixed P-256 key and auth
// secret (RFC 8291 Appendix A's), so every message is really encrypted.
//
// Tokens are 64 hex digits from a seeded userspace PRNG (SystemRandomNumberGenerator makes a syscall per value),
// written one per line to `--tokens FILE` when given, so a checker can match them at the APNs peer.

func option(_ name: String) -> String? {
    let args = CommandLine.arguments
    guard let index = args.firstIndex(of: "--\(name)"), index + 1 < args.count else { return nil }
    return args[index + 1]
}

guard let db = option("db"), let instance = option("instance"), let interest = option("interest"),
      let count = option("count").flatMap(Int.init) else {
    print("usage: SeedDevices --db PATH --instance UUID --interest NAME --count N [--environment E] [--seed S] [--tokens FILE]")
    exit(2)
}
let environment = PushEnvironment(rawValue: option("environment") ?? "sandbox") ?? .sandbox
guard let platform = Platform(rawValue: option("platform") ?? "apns") else {
    print("--platform: one of \(Platform.allCases.map(\.rawValue).joined(separator: ", "))")
    exit(2)
}
let endpoint = option("endpoint") ?? "https://127.0.0.1/push/"
/// The stored token of a device of `platform` made from a random hex token.
func platformToken(_ hex: String) -> String {
    switch platform {
    case .apns: return hex
    case .fcm: return "bench-fcm:\(hex)"
    case .hms: return "IQAAAACy0\(hex)AQ"
    case .web, .unifiedpush:
        return #"{"endpoint":"\#(endpoint)\#(hex)","keys":{"auth":"BTBZMqHH6r4Tts7J_aSIgg","#
            + #""p256dh":"BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"}}"#
    }
}
var generator = SplitMix64(seed: option("seed").flatMap(UInt64.init) ?? 1)
let started = Date()

var configuration = SQLitePushStore.Configuration(path: db)

let store = try await SQLitePushStore.open(configuration)
var tokens: [String] = []
tokens.reserveCapacity(count)
let batch = 1000
var deviceIDs: [String] = []
deviceIDs.reserveCapacity(count)
while tokens.count < count {
    let n = min(batch, count - tokens.count)
    let registrations = (0..<n).map { _ -> DeviceRegistration in
        let token = platformToken(generator.token())
        tokens.append(token)
        return DeviceRegistration(instanceID: instance, platform: platform, token: token, environment: environment,
                                  environmentDeclared: true, bundleID: platform == .apns ? "com.example.bench" : nil)
    }
    deviceIDs += try await store.registerDevices(registrations).map(\.device.id)
}
let registered = Date()
// One write per device; 256 in flight so the store's group commit batches them.
let ids = deviceIDs
try await withThrowingTaskGroup(of: Void.self) { group in
    var next = 0
    for _ in 0..<min(256, ids.count) {
        let id = ids[next]
        next += 1
        group.addTask { _ = try await store.addInterest(instanceID: instance, deviceID: id, interest: interest) }
    }
    while try await group.next() != nil {
        if next < ids.count {
            let id = ids[next]
            next += 1
            group.addTask { _ = try await store.addInterest(instanceID: instance, deviceID: id, interest: interest) }
        }
    }
}
try await store.close()
if let path = option("tokens") {
    try (tokens.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
}
let end = Date()
print("seeded \(count) \(platform.rawValue) devices on '\(interest)' in \(String(format: "%.1f", end.timeIntervalSince(started))) s "
      + "(register \(String(format: "%.1f", registered.timeIntervalSince(started))) s, "
      + "subscribe \(String(format: "%.1f", end.timeIntervalSince(registered))) s)")
