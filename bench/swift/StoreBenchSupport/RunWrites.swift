import BenchSupport
import Foundation
import PushStore

// What StoreBench (SQLite) and PGStoreBench (PostgreSQL) measure alike, written once: a publish run's writes and
// the status reads (the publish path's statements besides the target pages), the `[run writes]` line.

/// `value` with `digits` decimals.
package func format(_ value: Double, _ digits: Int = 1) -> String { String(format: "%.\(digits)f", value) }

/// One job claimed and checkpointed 40 times (500 device results, 100 answered refs and two counters each, as a
/// run of the hot interest writes them), 200 lease renewals, then 200 `publishStatus` and 50 `statistics` reads, on
/// `store`, whose `instance` has loaded followers of the interest "hot"; prints the `[run writes]` line.
package func runWrites(_ store: some PushStorage, instance: String, timer: () -> Double) async throws {
    let job = PublishJob(
        instanceID: instance, publishID: "checkpoints", kind: .interests, targets: ["hot"], payload: Data(),
        createdAt: Date())
    var refs: [Int64] = []
    var page = try await store.targets(for: job, after: 0, limit: 1000)
    refs += page.targets.map(\.ref)
    while !page.isLast {
        page = try await store.targets(for: job, after: page.cursor, limit: 1000)
        refs += page.targets.map(\.ref)
    }
    _ = try await store.enqueuePublish(job)
    guard let claimed = try await store.claimJob(workerID: "bench", leaseDuration: .seconds(600), now: Date()) else {
        fatalError("nothing to claim")
    }
    let rounds = 40
    let size = 500
    let cpuStart = cpuSeconds()
    var start = timer()
    for round in 0..<rounds {
        let slice = (0..<size).map { refs[(round * size + $0) % refs.count] }
        try await store.checkpoint(
            claimed.id, workerID: "bench", cursor: Int64(round),
            counters: [.targets: Int64(size), .accepted(.apns): Int64(size)],
            deviceResults: slice.map { DeviceResult(device: $0, status: 200, at: Date()) },
            answered: Array(slice.prefix(100)))
    }
    let checkpointSeconds = timer() - start
    let checkpointCPU = cpuSeconds() - cpuStart
    start = timer()
    for _ in 0..<200 {
        _ = try await store.renewLease(claimed.id, workerID: "bench", leaseDuration: .seconds(600), now: Date())
    }
    let renewSeconds = timer() - start
    start = timer()
    for _ in 0..<200 { _ = try await store.publishStatus(instanceID: instance, publishID: "checkpoints") }
    let statusSeconds = timer() - start
    start = timer()
    for _ in 0..<50 { _ = try await store.statistics(instanceID: instance, since: Date(timeIntervalSince1970: 0)) }
    let statisticsSeconds = timer() - start
    print(
        "[run writes] \(rounds) checkpoints of \(size) results, 100 answered refs, 2 counters: "
            + "\(format(checkpointSeconds * 1000 / Double(rounds), 2)) ms each "
            + "(\(format(Double(rounds * size) / checkpointSeconds, 0)) results/s; "
            + "\(format(checkpointCPU * 1000 / Double(rounds), 2)) ms CPU each); renewLease "
            + "\(format(renewSeconds * 1000 / 200, 3)) ms; publishStatus \(format(statusSeconds * 1000 / 200, 3)) ms; "
            + "statistics \(format(statisticsSeconds * 1000 / 50, 2)) ms")
}
