import BenchSupport
import Foundation
import PushStore
import SQLiteStore
import StoreBenchSupport
import TestSupport

// StoreBench: the SQLite store under a 1M-device registry. Prints every number with its method; see
// bench/store/run.sh and bench/store/RESULTS.md.
//
// usage: StoreBench [devices (default 1000000)] [directory (default: a new temp dir, removed afterwards)]

let arguments = CommandLine.arguments
let deviceCount = arguments.count > 1 ? Int(arguments[1]) ?? 1_000_000 : 1_000_000
let keepDirectory = arguments.count > 2
let directory = keepDirectory
    ? arguments[2] : FileManager.default.temporaryDirectory.appendingPathComponent("storebench-\(getpid())").path
try? FileManager.default.removeItem(atPath: directory)
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
let path = directory + "/bench.sqlite"
let instance = "6f1c3b2a-9d8e-4f70-a1b2-c3d4e5f60718"
let hotEvery = 10
let interestCount = 1000
let batchSize = 1000

report("StoreBench: \(deviceCount) devices, every \(hotEvery)th follows \"hot\", each follows 2 random of \(interestCount) interests")
report("database: \(path) (WAL, synchronous=NORMAL, 64 MiB writer page cache, 2 MiB per reader, 2 readers)")

// MARK: 1. Bulk load through the store API

/// STOREBENCH_WAL_PAGES overrides `walAutocheckpointPages` (for comparing settings).
func benchConfiguration() -> SQLitePushStore.Configuration {
    var configuration = SQLitePushStore.Configuration(path: path)
    if let pages = ProcessInfo.processInfo.environment["STOREBENCH_WAL_PAGES"].flatMap({ Int($0) }) {
        configuration.walAutocheckpointPages = pages
    }
    return configuration
}
report("wal_autocheckpoint: \(benchConfiguration().walAutocheckpointPages) pages")
var store = try await SQLitePushStore.open(benchConfiguration())
var random = SplitMix64(seed: 42)
var registerSeconds = 0.0
var interestSeconds = 0.0
let loadStart = seconds()
var loaded = 0
while loaded < deviceCount {
    let count = min(batchSize, deviceCount - loaded)
    var registrations: [DeviceRegistration] = []
    registrations.reserveCapacity(count)
    var follows: [[String]] = []
    for offset in 0..<count {
        registrations.append(
            DeviceRegistration(
                instanceID: instance, token: random.token(), bundleID: "com.example.app",
                metadata: #"{"sdkVersion":"4.0.0","iosVersion":"17.0.1"}"#))
        var names = [
            "i\(Int(random.next() % UInt64(interestCount)))", "i\(Int(random.next() % UInt64(interestCount)))",
        ]
        if (loaded + offset) % hotEvery == 0 { names.append("hot") }
        follows.append(names)
    }
    var t = seconds()
    let devices = try await store.registerDevices(registrations)
    registerSeconds += seconds() - t
    t = seconds()
    let work = zip(devices, follows).map { ($0.device.id, $1) }
    try await concurrently(work, width: 256) { [store] item in
        _ = try await store.setInterests(instanceID: instance, deviceID: item.0, interests: item.1)
    }
    interestSeconds += seconds() - t
    loaded += count
    if loaded % 100_000 == 0 {
        report("  loaded \(loaded) (\(format(seconds() - loadStart)) s, \(ProcessMemory.describe()))")
    }
}
let loadSeconds = seconds() - loadStart
report("""
    [load] \(deviceCount) devices in \(format(loadSeconds)) s
      registerDevices (batches of \(batchSize), one call = one transaction): \(format(registerSeconds)) s \
    → \(format(Double(deviceCount) / registerSeconds, 0)) registrations/s
      setInterests (one call per device, 256 in flight, group commit): \(format(interestSeconds)) s \
    → \(format(Double(deviceCount) / interestSeconds, 0)) calls/s
      after load: \(ProcessMemory.describe())
    """)

// MARK: 2. Single registrations

let singleConcurrent = 20_000
var singles = (0..<singleConcurrent).map { _ in DeviceRegistration(instanceID: instance, token: random.token()) }
var t0 = seconds()
try await concurrently(singles, width: 256) { [store] registration in _ = try await store.registerDevice(registration) }
let concurrentSingleSeconds = seconds() - t0
let sequentialCount = 2_000
singles = (0..<sequentialCount).map { _ in DeviceRegistration(instanceID: instance, token: random.token()) }
t0 = seconds()
for registration in singles { _ = try await store.registerDevice(registration) }
let sequentialSingleSeconds = seconds() - t0
report("""
    [register single] \(singleConcurrent) registerDevice calls, 256 in flight: \
    \(format(Double(singleConcurrent) / concurrentSingleSeconds, 0)) registrations/s
      \(sequentialCount) registerDevice calls one after another (one commit each): \
    \(format(Double(sequentialCount) / sequentialSingleSeconds, 0)) registrations/s
      (new tokens, so every call inserts; group-commit statistics so far: \(store.writerStatistics))
    """)

// MARK: 3. Streaming the fan-out of "hot"

try await store.close()
store = try await SQLitePushStore.open(benchConfiguration())
func stream(_ job: PublishJob, label: String) async throws {
    let start = seconds()
    var page = try await store.targets(for: job, after: 0, limit: 1000)
    let firstPage = seconds() - start
    var total = page.targets.count
    var peakRSS = ProcessMemory.current().rss
    while !page.isLast {
        page = try await store.targets(for: job, after: page.cursor, limit: 1000)
        total += page.targets.count
        peakRSS = max(peakRSS, ProcessMemory.current().rss)
    }
    let all = seconds() - start
    report("""
        [stream \(label)] first page of 1000: \(format(firstPage * 1000, 2)) ms; all \(total) targets in pages of 1000: \
        \(format(all * 1000, 0)) ms (\(format(Double(total) / all, 0)) targets/s); max VmRSS while streaming \
        \(format(peakRSS)) MiB
        """)
}
let hot = PublishJob(instanceID: instance, publishID: "hot", kind: .interests, targets: ["hot"], payload: Data(), createdAt: Date())
try await stream(hot, label: "hot, fresh store")
try await stream(hot, label: "hot, again")
let unionNames = ["hot"] + (1...9).map { "i\($0)" }
let union = PublishJob(instanceID: instance, publishID: "u", kind: .interests, targets: unionNames, payload: Data(), createdAt: Date())
try await stream(union, label: "hot + 9 interests, k-way merge")

// Reference: the one-statement alternative for the same union's first page, on a raw read-only connection.
let raw = try SQLiteConnection(path: path, readOnly: true)
let ids = try unionNames.map { name in
    try raw.first("SELECT id FROM interests WHERE instance_id = ? AND name = ?", [.text(instance), .text(name)]) { $0.int64(0) }!
}
let distinctSQL = """
    SELECT DISTINCT device_id FROM device_interests WHERE interest_id IN (\(ids.map(String.init).joined(separator: ",")))
    AND device_id > ? ORDER BY device_id LIMIT 1000
    """
var plan: [String] = []
try raw.query("EXPLAIN QUERY PLAN " + distinctSQL, [.integer(0)]) { plan.append($0.text(3)) }
t0 = seconds()
var distinctRows = 0
try raw.query(distinctSQL, [.integer(0)]) { _ in distinctRows += 1 }
let distinctSeconds = seconds() - t0
report("""
    [reference] SELECT DISTINCT … IN (10 interests) ORDER BY device_id LIMIT 1000 (ids only, no device join): \
    \(format(distinctSeconds * 1000, 2)) ms for \(distinctRows) rows; plan: \(plan.joined(separator: " / "))
    """)
try raw.close()
try await store.close()

// MARK: 4. Enqueue with group commit vs one transaction per row

func enqueueComparison(synchronous: SQLiteConnection.Synchronous) async throws {
    let queuePath = directory + "/queue-\(synchronous.rawValue).sqlite"
    var configuration = SQLitePushStore.Configuration(path: queuePath)
    configuration.synchronous = synchronous
    let queue = try await SQLitePushStore.open(configuration)
    let payload = Data(repeating: 0x61, count: 2048)
    func jobs(_ prefix: String) -> [PublishJob] {
        (0..<1000).map {
            PublishJob(instanceID: instance, publishID: "\(prefix)-\($0)", kind: .interests, targets: ["hot"], payload: payload, createdAt: Date())
        }
    }
    // Warm up (statement preparation, file growth), then alternate the two methods and keep each one's median.
    for job in jobs("warm").prefix(100) { _ = try await queue.enqueuePublish(job) }
    var groupTimes: [Double] = []
    var serialTimes: [Double] = []
    var serialCPU: [Double] = []
    var transactions: [Int] = []
    for round in 0..<3 {
        let before = queue.writerStatistics
        var start = seconds()
        try await concurrently(jobs("g\(round)"), width: 1000) { job in _ = try await queue.enqueuePublish(job) }
        groupTimes.append(seconds() - start)
        transactions.append(queue.writerStatistics.transactions - before.transactions)
        let serial = jobs("s\(round)")
        let cpu = cpuSeconds()
        start = seconds()
        for job in serial { _ = try await queue.enqueuePublish(job) }
        serialTimes.append(seconds() - start)
        serialCPU.append(cpuSeconds() - cpu)
    }
    let groupSeconds = groupTimes.sorted()[1]
    let serialSeconds = serialTimes.sorted()[1]
    report("""
        [enqueue, synchronous=\(synchronous.rawValue)] 1000 concurrent enqueuePublish (2 KiB payload), median of 3: \
        \(format(groupSeconds * 1000, 0)) ms = \(format(1000 / groupSeconds, 0))/s (transactions per round: \(transactions)); \
        reference 1000 sequential enqueues, one transaction per row: \(format(serialSeconds * 1000, 0)) ms = \
        \(format(1000 / serialSeconds, 0))/s (\(format(serialCPU.sorted()[1], 3)) s CPU); ratio \(format(serialSeconds / groupSeconds, 1))x
        """)
    try await queue.close()
}
try await enqueueComparison(synchronous: .normal)
try await enqueueComparison(synchronous: .full)


store = try await SQLitePushStore.open(benchConfiguration())
try await runWrites(store, instance: instance, timer: seconds)
try await store.close()

let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
report("[end] database \(size / 1_048_576) MiB; \(ProcessMemory.describe())")
if !keepDirectory { try? FileManager.default.removeItem(atPath: directory) }
