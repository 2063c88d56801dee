import Foundation
import PushStore
import SQLiteStore
import TestSupport

// Bulk-loads N APNs devices following one interest into a push-server database, through the store's own API (the
// same code path as registration), so benchmarks can start the server on a large registry in seconds.
//
//   SeedDevices --db PATH --instance UUID --interest NAME --count N [--environment sandbox|production] [--seed S]
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
        let token = generator.token()
        tokens.append(token)
        return DeviceRegistration(instanceID: instance, token: token, environment: environment, environmentDeclared: true,
                                  bundleID: "com.example.bench")
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
print("seeded \(count) devices on '\(interest)' in \(String(format: "%.1f", end.timeIntervalSince(started))) s "
      + "(register \(String(format: "%.1f", registered.timeIntervalSince(started))) s, "
      + "subscribe \(String(format: "%.1f", end.timeIntervalSince(registered))) s)")
