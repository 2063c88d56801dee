/// The requests a sender accepted and has not reported yet, by id (`SenderLedger` keeps one behind its lock for the
/// FCM and Web Push senders). Claiming one removes it and is the right to report it, so every request is reported
/// exactly once: by its answer, or by shutdown, whichever claims it first.
package struct PendingJobs<Job> {
    private var nextID = 0
    private var jobs: [Int: Job] = [:]

    package init() {}

    /// The id `add` gave last (0 before the first).
    package var lastID: Int { nextID }

    /// Adds the job `make` builds for the next id and returns it.
    package mutating func add(_ make: (Int) -> Job) -> Job {
        nextID += 1
        let job = make(nextID)
        jobs[nextID] = job
        return job
    }

    /// Whether job `id` is still pending (not claimed).
    package func contains(_ id: Int) -> Bool { jobs[id] != nil }

    /// Claims job `id`. - Returns: false when it was claimed already.
    package mutating func claim(_ id: Int) -> Bool { jobs.removeValue(forKey: id) != nil }

    /// Claims every pending job. - Returns: them in the order they were added.
    package mutating func claimAll() -> [Job] {
        defer { jobs = [:] }
        return jobs.sorted { $0.key < $1.key }.map(\.value)
    }
}

extension PendingJobs: Sendable where Job: Sendable {}
