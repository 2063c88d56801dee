import Foundation
import PostgreSQLStore
import PushStore
import StoreBenchSupport
import TestSupport

// PGStoreBench: the PostgreSQL store on a throwaway PostgreSQL 15 cluster (fsync on, shared_buffers 256 MB,
// max_wal_size 4 GB), client and server on the same machine. Prints every number with its method.
//
// usage: PGStoreBench [devices (default 100000)] [pool size (default 4)]

let arguments = CommandLine.arguments
let deviceCount = arguments.count > 1 ? Int(arguments[1]) ?? 100_000 : 100_000
let poolSize = arguments.count > 2 ? Int(arguments[2]) ?? 4 : 4
let instance = "6f1c3b2a-9d8e-4f70-a1b2-c3d4e5f60718"
let hotEvery = 10
let interestCount = 1000
let batchSize = 1000

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

let cluster = try PostgreSQLCluster.start(fsync: true)
defer { cluster.stop() }
let database = try cluster.createDatabase(prefix: "bench")
var configuration = PostgreSQLPushStore.Configuration(connectionString: cluster.connectionString(database: database))
configuration.poolSize = poolSize
let store = try await PostgreSQLPushStore.open(configuration)
print("PGStoreBench: \(deviceCount) devices, every \(hotEvery)th follows \"hot\", each follows 2 random of "
    + "\(interestCount) interests; pool of \(poolSize) connections")

// MARK: 1. Load through the store API

var random = SplitMix64(seed: 42)
var registerSeconds = 0.0
var interestSeconds = 0.0
var loaded = 0
while loaded < deviceCount {
    let count = min(batchSize, deviceCount - loaded)
    var registrations: [DeviceRegistration] = []
    var follows: [[String]] = []
    for offset in 0..<count {
        registrations.append(DeviceRegistration(instanceID: instance, token: random.token(), bundleID: "com.example.app",
                                                metadata: #"{"sdkVersion":"4.0.0"}"#))
        var names = ["i\(Int(random.next() % UInt64(interestCount)))", "i\(Int(random.next() % UInt64(interestCount)))"]
        if (loaded + offset) % hotEvery == 0 { names.append("hot") }
        follows.append(names)
    }
    var t = now()
    let devices = try await store.registerDevices(registrations)
    registerSeconds += now() - t
    t = now()
    try await concurrently(Array(zip(devices.map(\.device.id), follows)), width: 64) { item in
        _ = try await store.setInterests(instanceID: instance, deviceID: item.0, interests: item.1)
    }
    interestSeconds += now() - t
    loaded += count
}
print("[load] registerDevices (batches of \(batchSize), one call each): "
    + "\(format(Double(deviceCount) / registerSeconds, 0)) registrations/s; setInterests (one call per device, "
    + "64 in flight, group commit): \(format(Double(deviceCount) / interestSeconds, 0)) calls/s")

// MARK: 2. Single registrations, concurrent

let singles = (0..<5000).map { _ in DeviceRegistration(instanceID: instance, token: random.token()) }
var t0 = now()
try await concurrently(singles, width: 64) { _ = try await store.registerDevice($0) }
print("[register single] 5000 registerDevice calls, 64 in flight: \(format(5000 / (now() - t0), 0)) registrations/s")

// MARK: 3. Streaming a fan-out

_ = try cluster.sql("VACUUM ANALYZE", database: database)
func stream(_ job: PublishJob, label: String) async throws {
    let start = now()
    var page = try await store.targets(for: job, after: 0, limit: 1000)
    let first = now() - start
    var total = page.targets.count
    while !page.isLast {
        page = try await store.targets(for: job, after: page.cursor, limit: 1000)
        total += page.targets.count
    }
    let all = now() - start
    print("[stream \(label)] first page of 1000: \(format(first * 1000, 2)) ms; all \(total) targets in pages of 1000: "
        + "\(format(all * 1000, 0)) ms (\(format(Double(total) / all, 0)) targets/s)")
}
try await stream(PublishJob(instance: instance, targets: ["hot"]), label: "hot")
try await stream(PublishJob(instance: instance, targets: ["hot"] + (1...9).map { "i\($0)" }), label: "hot + 9 interests")

try await runWrites(store, instance: instance, timer: now)

// MARK: 4. Intake

let payload = Data(repeating: 0x61, count: 2048)
let jobs = (0..<2000).map {
    PublishJob(instanceID: instance, publishID: "p\($0)", kind: .interests, targets: ["hot"], payload: payload, createdAt: Date())
}
t0 = now()
try await concurrently(jobs, width: 256) { _ = try await store.enqueuePublish($0) }
print("[enqueue] 2000 concurrent enqueuePublish (2 KiB payload, 256 in flight, group commit): "
    + "\(format(2000 / (now() - t0), 0))/s")

let size = try cluster.sql("SELECT pg_database_size(current_database()) / 1048576", database: database)
print("[end] database \(size.trimmingCharacters(in: .whitespacesAndNewlines)) MiB")
try await store.close()

extension PublishJob {
    init(instance: String, targets: [String]) {
        self.init(instanceID: instance, publishID: "bench", kind: .interests, targets: targets, payload: Data(), createdAt: Date())
    }
}
