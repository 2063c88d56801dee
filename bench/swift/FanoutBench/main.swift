// FanoutBench: one fan-out per platform through its sender, in one process against one local HTTP/2 sink
// (bench/apns/nginx-sink.sh), so the three rates and CPU costs are comparable side by side.
//
//   FanoutBench --url https://127.0.0.1:18443 --ca cert.pem [-n 20000]
//               [--platforms apns,fcm,webpush,unifiedpush,webpush-instances] [--instances 3]
//               [--webpush-encryption caller,workers] [--webpush-connections-per-host N]
//
// Method: per platform, a single task submits N notifications with backpressure (`submit` suspends while the
// sender's window is full) and every callback counts its result; wall time runs from the first submit to the last
// result, after a warm-up that opens the connections and gets the APNs provider token / FCM access token. CPU is
// getrusage(RUSAGE_SELF) user+sys over the same span (submitting task, curl threads, callbacks). Window sizes:
// APNs 4 connections × 250 streams; FCM 4 × 100 (its defaults); Web Push 2 multis, window 512 (its defaults) with
// HTTP/2 to the sink. Web Push encrypts each message (RFC 8291, fresh ephemeral key) on the shared encryption
// workers (`--webpush-encryption caller,workers` runs Web Push and UnifiedPush once per value, labelled
// `webpush-caller` / `webpush-workers`; `caller` is the submitting task, as before the workers); its 100
// subscriber keys are made before the clock starts. Each RESULT line splits the CPU by thread group
// (`webpush-enc` the workers, `webpush` and `apns-…` the curl loops, the rest Swift's and Dispatch's pools).
import APNsClient
import BenchSupport
import Clocks
import FCMClient
import Foundation
import HTTPClient
import JSON
import JWTSigner
import Synchronization
import TestSupport
import WebPush

struct Options {
    var url = "https://127.0.0.1:18443"
    var ca: String?
    var count = 20_000
    var platforms = ["apns", "fcm", "webpush"]
    var warmup = 1_000
    /// `WebPushSenderConfiguration.encryptsOnWorkers` values to run; nil: the default only.
    var webPushOnWorkers: [Bool]?
    /// Senders publishing at once for `webpush-instances`.
    var instances = 3
    /// `WebPushSenderConfiguration.connectionsPerHost` for `webpush`; nil: the default.
    var webPushConnectionsPerHost: Int?
}

@MainActor
func parseOptions() -> Options {
    var options = Options()
    forEachOption { argument, value in
        switch argument {
        case "--url": options.url = value
        case "--ca": options.ca = value
        case "-n": options.count = Int(value) ?? options.count
        case "--warmup": options.warmup = Int(value) ?? options.warmup
        case "--platforms": options.platforms = value.split(separator: ",").map(String.init)
        case "--instances": options.instances = Int(value) ?? options.instances
        case "--webpush-connections-per-host": options.webPushConnectionsPerHost = Int(value)
        case "--webpush-encryption": options.webPushOnWorkers = value.split(separator: ",").map { $0 == "workers" }
        default: return false
        }
        return true
    }
    return options
}

/// A value behind a lock that escaping closures can share.
final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
}

/// CPU ticks (utime + stime, 1/CLK_TCK s) and name of each of this process's threads, by thread id.
func threadTicks() -> [Int: (name: String, ticks: Int)] {
    var threads: [Int: (name: String, ticks: Int)] = [:]
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
        guard let tid = Int(entry),
              let text = try? String(contentsOfFile: "/proc/self/task/\(entry)/stat", encoding: .utf8),
              let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")") else { continue }
        // Fields after the command name: state is field 3, utime 14 and stime 15 (proc(5)).
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { continue }
        threads[tid] = (String(text[text.index(after: open)..<close]), user + system)
    }
    return threads
}

/// Thread name without its `-<n>` index: the group a thread belongs to (`webpush-enc`, `apns-…`, the cooperative
/// pool and Dispatch's threads under the process name).
func threadGroup(_ name: String) -> String {
    guard let dash = name.lastIndex(of: "-"), name[name.index(after: dash)...].allSatisfy(\.isNumber),
          dash != name.index(before: name.endIndex) else { return name }
    return String(name[..<dash])
}

/// Runs `submitAll` twice (warm-up, then measured) and prints one RESULT line.
func measure(_ label: String, count: Int, warmup: Int, _ submitAll: (Int, Int, Tally) async -> Void) async {
    let warm = Tally()
    await submitAll(warmup, 10_000_000, warm)
    await warm.wait(for: warmup)
    let tally = Tally()
    let startWall = MonotonicClock.seconds()
    let startCPU = cpuSeconds()
    let startThreads = threadTicks()
    await submitAll(count, 0, tally)
    await tally.wait(for: count)
    let wall = MonotonicClock.seconds() - startWall
    let cpu = cpuSeconds() - startCPU
    // The busiest thread's share of the CPU: what one core must carry, so the rate a machine with idle cores
    // could reach is about count / (its CPU seconds), whatever the load on this one.
    let endThreads = threadTicks()
    let deltas = endThreads.map { ($0.value.name, $0.value.ticks - (startThreads[$0.key]?.ticks ?? 0)) }
    let perThread = deltas.map(\.1).sorted(by: >)
    let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
    let busiest = Double(perThread.first ?? 0) / hz
    let busy = perThread.filter { $0 > 0 }.count
    let groups = Dictionary(deltas.map { (threadGroup($0.0), $0.1) }, uniquingKeysWith: +)
        .filter { $0.value > 0 }.sorted { $0.value > $1.value }
        .map { "\($0.key):\(String(format: "%.1f", Double($0.value) / hz / Double(count) * 1e6))" }.joined(separator: ",")
    print("RESULT platform=\(label) n=\(count) wall_s=\(String(format: "%.3f", wall)) rate_per_s=\(Int(Double(count) / wall)) "
          + "cpu_s=\(String(format: "%.3f", cpu)) cpu_us_per_notification=\(String(format: "%.1f", cpu / Double(count) * 1e6)) "
          + "busiest_thread_us_per_notification=\(String(format: "%.1f", busiest / Double(count) * 1e6)) "
          + "busiest_thread_share=\(String(format: "%.2f", cpu > 0 ? busiest / cpu : 0)) threads_busy=\(busy) "
          + "us_per_notification_by_thread=\(groups) "
          + "results=\(tally.summary) loadavg=\(loadAverage())")
}

let options = parseOptions()

// MARK: APNs (the reference figure)
if options.platforms.contains("apns") {
    let pair = try TestKeys.makeP256()
    let credentials = APNsCredentials(teamID: "TEAM123456", keyID: "KEY1234567", key: try ES256PrivateKey(pem: pair.privateKeyPEM))
    TestKeys.remove(pair)
    let client = try APNsClient(configuration: APNsClientConfiguration(connectionsPerPool: 4, streamsPerConnection: 250))
    let environment = APNsEnvironment.custom(url: options.url, caFile: options.ca)
    let payload = Array(#"{"aps":{"alert":{"title":"Benchmark","body":"A notification body of a typical size for APNs pushes."},"sound":"default"},"id":123}"#.utf8)
    await measure("apns", count: options.count, warmup: options.warmup) { count, offset, tally in
        for i in 0..<count {
            let hex = String(offset + i, radix: 16)
            let request = APNsRequest(deviceToken: String(repeating: "0", count: 64 - hex.count) + hex, payload: payload,
                                      topic: "com.example.app", pushType: .alert, priority: .immediate,
                                      expiration: Date(timeIntervalSince1970: 0))
            await client.submit(request, credentials: credentials, environment: environment) { result in
                if case .response(let response) = result { tally.record(String(response.status)) } else { tally.record("failure") }
            }
        }
    }
    _ = await client.shutdown(gracePeriod: .seconds(5))
}

// MARK: FCM HTTP v1
if options.platforms.contains("fcm") {
    let pair = try TestKeys.makeRSA()
    let account = try ServiceAccount(json: JSONValue.object([
        "type": "service_account", "project_id": "bench-project", "private_key_id": "0123456789abcdef",
        "private_key": .string(pair.privateKeyPEM), "client_email": "bench@bench-project.iam.gserviceaccount.com",
        "token_uri": .string(options.url + "/token"),
    ]).serialized())
    TestKeys.remove(pair)
    let sender = try FCMSender(account: account, configuration: FCMSenderConfiguration(baseURL: options.url, caFile: options.ca))
    let template = try FCMMessageTemplate(
        section: JSONValue.parse(Array(#"{"notification":{"title":"Benchmark","body":"A notification body of a typical size for FCM pushes."},"data":{"id":"123"}}"#.utf8))!,
        instanceID: "bench-instance", publishID: "pubid-bench")
    await measure("fcm", count: options.count, warmup: options.warmup) { count, offset, tally in
        for i in 0..<count {
            // Registration tokens are ~150 characters.
            let token = "fcm-" + String(offset + i) + String(repeating: "x", count: 140)
            await sender.submit(FCMRequest(token: token, message: template)) { result in
                switch result {
                case .response(.sent, _): tally.record("sent")
                case .response(let answer, _): tally.record("\(answer)".prefix(30).description)
                case .failure(let failure): tally.record("\(failure)".prefix(40).description)
                }
            }
        }
    }
    print("FCM stats: \(sender.stats())")
    _ = await sender.shutdown(gracePeriod: .seconds(5))
}

/// 100 browser subscriptions with fresh keys, the i-th at `endpoint(i)`.
func makeSubscriptions(_ endpoint: (Int) -> String) throws -> [WebPushSubscription] {
    try (0..<100).map { i in
        let key = try P256KeyPair.generate()
        let auth = (0..<16).map { _ in UInt8.random(in: 0...255) }
        return try WebPushSubscription(endpoint: endpoint(i), p256dh: Base64URL.encode(key.publicPoint),
                                       auth: Base64URL.encode(auth))
    }
}

/// The Web Push and UnifiedPush runs' message.
let webPushMessage = try WebPushMessage(
    payload: Array(#"{"notification":{"title":"Benchmark","body":"A notification body of a typical size for web pushes."},"data":{"id":"123"}}"#.utf8),
    ttl: 3600)

/// `measure` for one Web Push sender: the messages go to `subscriptions` in turn. The usual answer gets a fixed
/// label, as APNs' run records its status (the bench's own formatting, reflection over the enum, is not the sender's
/// cost).
func measure(
    _ label: String, _ sender: WebPushSender, _ subscriptions: [WebPushSubscription], count: Int, warmup: Int
) async {
    await measure(label, count: count, warmup: warmup) { count, _, tally in
        for i in 0..<count {
            let notification = WebPushNotification(
                subscription: subscriptions[i % subscriptions.count], message: webPushMessage)
            await sender.submit(notification) { result in
                switch result {
                case .response(.accepted(let status), _): tally.record(status == 201 ? "accepted-201" : "accepted")
                case .response(let outcome, _): tally.record("\(outcome)".prefix(30).description)
                case .failure(let failure): tally.record("\(failure)".prefix(40).description)
                }
            }
        }
    }
}

/// The encryption-worker settings to run Web Push and UnifiedPush with, and each run's label suffix.
let workerRuns: [(onWorkers: Bool?, suffix: String)] =
    options.webPushOnWorkers.map { $0.map { ($0, $0 ? "-workers" : "-caller") } } ?? [(nil, "")]

// MARK: Web Push
if options.platforms.contains("webpush") { for (onWorkers, suffix) in workerRuns {
    var configuration = WebPushSenderConfiguration(
        allowedHosts: try WebPushHostAllowlist(parsing: [String(options.url.dropFirst("https://".count))]),  // host:port
        policy: DestinationPolicy(allowances: [try .init(parsing: "127.0.0.1/32")]), caFile: options.ca)
    if let onWorkers { configuration.encryptsOnWorkers = onWorkers }
    if let perHost = options.webPushConnectionsPerHost { configuration.connectionsPerHost = perHost }
    let vapid = VAPIDAuthorizer(keyPair: try VAPIDKeyPair.generate().keyPair, subject: try VAPIDSubject("mailto:bench@example.com"))
    let sender = try WebPushSender(vapid: vapid, configuration: configuration)
    let subscriptions = try makeSubscriptions { options.url + "/push/sub-\($0)" }
    await measure("webpush" + suffix, sender, subscriptions, count: options.count, warmup: options.warmup)
    print("Web Push stats: \(sender.stats()), VAPID tokens signed: \(vapid.signCount)")
    _ = await sender.shutdown(gracePeriod: .seconds(5))
} }

// MARK: Web Push from several instances at once (`--platforms webpush-instances`, `--instances K`): K senders, each
// with its own VAPID key and 100 subscriptions, as K instances of the server are, submit N/K messages each at the
// same time through the one shared encryption pool. Prints the overall RESULT and, per instance, when its last
// message was answered: the pool is fair when those times are close (the spread is max/min).
if options.platforms.contains("webpush-instances") {
    let instances = max(1, options.instances)
    var senders: [WebPushSender] = []
    var subscriptionsByInstance: [[WebPushSubscription]] = []
    for _ in 0..<instances {
        let configuration = WebPushSenderConfiguration(
            allowedHosts: try WebPushHostAllowlist(parsing: [String(options.url.dropFirst("https://".count))]),
            policy: DestinationPolicy(allowances: [try .init(parsing: "127.0.0.1/32")]), caFile: options.ca)
        let vapid = VAPIDAuthorizer(keyPair: try VAPIDKeyPair.generate().keyPair, subject: try VAPIDSubject("mailto:bench@example.com"))
        senders.append(try WebPushSender(vapid: vapid, configuration: configuration))
        let instance = senders.count
        subscriptionsByInstance.append(try makeSubscriptions { options.url + "/push/i\(instance)-sub-\($0)" })
    }
    let all = subscriptionsByInstance
    let running = senders
    let finishedAt = Shared<[Int: Double]>([:])
    var start = 0.0
    await measure("webpush-\(instances)-instances", count: options.count / instances * instances, warmup: options.warmup / instances * instances) { count, offset, tally in
        let share = count / instances
        let remaining = Shared([Int](repeating: share, count: instances))
        if offset == 0 { start = MonotonicClock.seconds() }
        await withTaskGroup(of: Void.self) { group in
            for instance in 0..<instances {
                group.addTask {
                    for i in 0..<share {
                        let subscription = all[instance][i % all[instance].count]
                        await running[instance].submit(WebPushNotification(subscription: subscription, message: webPushMessage)) { result in
                            switch result {
                            case .response(let outcome, _): tally.record("\(outcome)".prefix(30).description)
                            case .failure(let failure): tally.record("\(failure)".prefix(40).description)
                            }
                            let last = remaining.value.withLock { left -> Bool in
                                left[instance] -= 1
                                return left[instance] == 0
                            }
                            if last && offset == 0 { finishedAt.value.withLock { $0[instance] = MonotonicClock.seconds() } }
                        }
                    }
                }
            }
        }
    }
    let times = finishedAt.value.withLock { $0 }.sorted { $0.key < $1.key }.map { $0.value - start }
    if let first = times.min(), let last = times.max(), first > 0 {
        print("INSTANCES n=\(instances) finished_s=\(times.map { String(format: "%.3f", $0) }.joined(separator: ",")) "
              + "spread=\(String(format: "%.2f", last / first))")
    }
    for sender in senders { _ = await sender.shutdown(gracePeriod: .seconds(5)) }
}

// MARK: UnifiedPush: the Web Push sender with open endpoints (any host on an allowed port, a share per host), to
// ntfy-shaped endpoints (`/up…?up=1`), which the sink answers 200 as ntfy does.
if options.platforms.contains("unifiedpush") { for (onWorkers, suffix) in workerRuns {
    let vapid = VAPIDAuthorizer(keyPair: try VAPIDKeyPair.generate().keyPair, subject: try VAPIDSubject("mailto:bench@example.com"))
    let port = Int(options.url.split(separator: ":").last ?? "") ?? 443
    var configuration = WebPushSenderConfiguration(
        policy: DestinationPolicy(allowances: [try .init(parsing: "127.0.0.1/32")]), caFile: options.ca)
    configuration.openEndpoints = WebPushOpenEndpoints(ports: [port])
    configuration.windowPerService = 64  // the unifiedpush.maxInFlightPerHost default
    if let onWorkers { configuration.encryptsOnWorkers = onWorkers }
    let sender = try WebPushSender(vapid: vapid, configuration: configuration)
    let subscriptions = try makeSubscriptions { options.url + "/upSub\($0)?up=1" }
    await measure("unifiedpush" + suffix, sender, subscriptions, count: options.count, warmup: options.warmup)
    print("UnifiedPush stats: \(sender.stats())")
    _ = await sender.shutdown(gracePeriod: .seconds(5))
} }
