/// Which claimable job a node takes first (`PublishQueue.claimJob`): jobs come oldest first, but a node that already
/// runs publishes of one instance takes an older job of that instance only when no other instance has one waiting.
/// Without it, one instance's backlog of queued publishes would keep every other instance's publish in the store
/// until the whole backlog had been claimed.
package struct ClaimPreference: Sendable, Equatable {
    /// The publishes this node runs, by instance id as stored in the job. A job of an instance with fewer runs here
    /// is claimed first (an absent instance counts 0); among equals, the oldest.
    package var runsByInstance: [String: Int]
    /// Claim only a job of an instance absent from `runsByInstance` (the node's floor of one publish per
    /// instance: its slots are all taken, so nothing else would start now).
    package var onlyAbsentInstances: Bool

    package init(runsByInstance: [String: Int] = [:], onlyAbsentInstances: Bool = false) {
        self.runsByInstance = runsByInstance.filter { $0.value > 0 }
        self.onlyAbsentInstances = onlyAbsentInstances
    }

    /// The oldest claimable job, whatever its instance.
    package static let oldestFirst = ClaimPreference()

    /// How many runs this node has of `instanceID` (0 when none): the claim's first sort key.
    package func rank(of instanceID: String) -> Int { runsByInstance[instanceID] ?? 0 }

    /// Whether a job of `instanceID` may be claimed at all.
    package func admits(_ instanceID: String) -> Bool { !onlyAbsentInstances || rank(of: instanceID) == 0 }

    /// The instances with runs here and their counts, in a stable order (for a store's query parameters).
    package var rankedInstances: (ids: [String], runs: [Int64]) {
        let sorted = runsByInstance.sorted { $0.key < $1.key }
        return (sorted.map(\.key), sorted.map { Int64($0.value) })
    }
}
