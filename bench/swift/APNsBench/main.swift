// APNsBench: sends N notifications through APNsClient to an HTTP/2 sink and prints throughput and CPU cost.
//
//   APNsBench --url https://127.0.0.1:8443 --ca server.crt [-n 100000] [--connections 4] [--streams 250]
//             [--key key.p8] [--label name]
//
// Method: one team key (a fresh P-256 key unless --key), one pool; a single task submits all N requests with
// backpressure (`submit` suspends while the window is full); every callback records its result. Wall time runs
// from the first submit to the last result and includes connection setup. CPU time is getrusage(RUSAGE_SELF)
// user+sys over the same span (the whole process: submitting task, curl threads, callbacks).
import APNsClient
import BenchSupport
import Clocks
import Foundation
import JWTSigner
import TestSupport

struct Options {
    var url = "https://127.0.0.1:8443"
    var ca: String?
    var count = 100_000
    var connections = 4
    var streams = 250
    var key: String?
    var label = "APNsClient"
    var warmup = 2_000
}

@MainActor
func parseOptions() -> Options {
    var options = Options()
    forEachOption { argument, value in
        switch argument {
        case "--url": options.url = value
        case "--ca": options.ca = value
        case "-n": options.count = Int(value) ?? options.count
        case "--connections": options.connections = Int(value) ?? options.connections
        case "--streams": options.streams = Int(value) ?? options.streams
        case "--key": options.key = value
        case "--label": options.label = value
        case "--warmup": options.warmup = Int(value) ?? options.warmup
        default: return false
        }
        return true
    }
    return options
}

func hexToken(_ i: Int) -> String {
    let hex = String(i, radix: 16)
    return String(repeating: "0", count: 64 - hex.count) + hex
}

let options = parseOptions()
let pem: String
if let path = options.key {
    pem = try String(contentsOfFile: path, encoding: .utf8)
} else {
    let pair = try TestKeys.makeP256()
    pem = pair.privateKeyPEM
    TestKeys.remove(pair)
}
let credentials = APNsCredentials(teamID: "TEAM123456", keyID: "KEY1234567", key: try ES256PrivateKey(pem: pem))
let environment = APNsEnvironment.custom(url: options.url, caFile: options.ca)
let client = try APNsClient(
    configuration: APNsClientConfiguration(
        connectionsPerPool: options.connections, streamsPerConnection: options.streams))
// The same 130-byte alert payload as bench/apns/h2load.sh and curl_multi_loop.c.
let payload = Array(#"{"aps":{"alert":{"title":"Benchmark","body":"A notification body of a typical size for APNs pushes."},"sound":"default"},"id":123}"#.utf8)
precondition(payload.count == 130)

/// Device tokens are made before the clock starts: the publish engine reads them from the store, and the C loop
/// being compared sends one constant URL.
func makeTokens(_ count: Int, offset: Int) -> [String] { (0..<count).map { hexToken(offset + $0) } }

func run(_ tokens: [String]) async -> Tally {
    let count = tokens.count
    let tally = Tally()
    for i in 0..<count {
        let request = APNsRequest(
            deviceToken: tokens[i], payload: payload, topic: "com.example.app", pushType: .alert,
            priority: .immediate, expiration: Date(timeIntervalSince1970: 0))
        await client.submit(request, credentials: credentials, environment: environment) { result in
            switch result {
            case .response(let response): tally.record(String(response.status))
            case .failure(let failure): tally.record(String(describing: failure).prefix(60).description)
            }
        }
    }
    await tally.wait(for: count)
    return tally
}

// Warm-up: opens the connections and mints the token outside the measured span.
_ = await run(makeTokens(options.warmup, offset: 10_000_000))
let tokens = makeTokens(options.count, offset: 0)
let startWall = monotonicSeconds()
let startCPU = cpuSeconds()
let tally = await run(tokens)
let wall = monotonicSeconds() - startWall
let cpu = cpuSeconds() - startCPU
let stats = client.stats()
_ = await client.shutdown(gracePeriod: .seconds(5))

func monotonicSeconds() -> Double { MonotonicClock.seconds() }

let rate = Double(options.count) / wall
print(
    "RESULT label=\(options.label) n=\(options.count) connections=\(options.connections) streams=\(options.streams) "
        + "wall_s=\(String(format: "%.3f", wall)) rate_per_s=\(Int(rate)) "
        + "cpu_s=\(String(format: "%.3f", cpu)) cpu_us_per_req=\(String(format: "%.1f", cpu / Double(options.count) * 1e6)) "
        + "results=\(tally.counts.sorted { $0.key < $1.key }) retries=\(stats.retries) connections_opened=\(stats.connectionsOpened) "
        + "loadavg=\(loadAverage())")
