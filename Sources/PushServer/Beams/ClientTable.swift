/// A map from client key to per-client state that cannot grow without bound.
///
/// Entries a predicate calls idle (a refilled bucket, an expired window) carry no information and are swept out:
/// at most once per `sweepInterval`, and whenever the table is full. When it is still full after a sweep, a new key
/// is not stored: `update` returns nil and the caller decides (the limiters let such requests through as
/// `.untracked`, so a flood of addresses cannot lock out newcomers, and count them). Pure: time is a parameter.
struct ClientTable<Entry> {
    private(set) var entries: [String: Entry] = [:]
    let capacity: Int
    let sweepInterval: Double
    private var lastSweep = -Double.infinity
    /// Keys refused since the start because the table was full.
    private(set) var overflows = 0

    init(capacity: Int, sweepInterval: Double = 60) {
        self.capacity = max(1, capacity)
        self.sweepInterval = sweepInterval
    }

    /// Runs `body` on the entry for `key` (made by `create` when missing).
    /// - Returns: `body`'s result, or nil when the key is new and the table is full of live entries.
    mutating func update<R>(
        _ key: String, now: Double, isIdle: (Entry) -> Bool, create: () -> Entry, _ body: (inout Entry) -> R
    ) -> R? {
        if now - lastSweep >= sweepInterval { sweep(now: now, isIdle) }
        if entries[key] == nil && entries.count >= capacity {
            // Sweep again on a full table, but not on every request of a flood (at most once a second).
            if now - lastSweep >= min(1, sweepInterval) { sweep(now: now, isIdle) }
            if entries.count >= capacity {
                overflows += 1
                return nil
            }
        }
        var entry = entries[key] ?? create()
        let result = body(&entry)
        entries[key] = entry
        return result
    }

    /// Changes the entry for `key` only if it exists.
    mutating func modifyExisting<R>(_ key: String, _ body: (inout Entry) -> R) -> R? {
        guard var entry = entries[key] else { return nil }
        let result = body(&entry)
        entries[key] = entry
        return result
    }

    private mutating func sweep(now: Double, _ isIdle: (Entry) -> Bool) {
        lastSweep = now
        entries = entries.filter { !isIdle($0.value) }
    }
}
