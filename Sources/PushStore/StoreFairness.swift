/// How a backend shares its store threads between tenants (`FairQueue` in Locking): one rule for SQLite's writer
/// and PostgreSQL's connection threads.
package enum StoreFairness {
    /// The weight of the publish engine's and housekeeping's work (tenant `""`) against one instance's device and
    /// publish API writes: the engine writes for every instance's fan-outs, so an abusive instance must not take
    /// it half the store.
    package static let engineWeight = 4
}
