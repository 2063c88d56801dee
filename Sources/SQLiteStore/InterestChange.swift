import StoreSQL

/// A change to one device's interest set, made in one writer operation or in several (`SQLitePushStore.setInterests`):
/// the names to unfollow, then the names to follow, and how far it has got.
struct InterestChange: Sendable {
    /// How many of the removals and additions are made.
    struct Progress: Sendable, Equatable {
        var removed = 0
        var added = 0
    }

    /// The device's internal key; a step whose device no longer has it stops.
    let ref: Int64
    let removals: [String]
    let additions: [String]
    var done = Progress()

    /// Changes in all.
    var count: Int { removals.count + additions.count }
    var isFinished: Bool { done.removed == removals.count && done.added == additions.count }

    /// The change that reverses the part made so far.
    var undone: InterestChange {
        InterestChange(ref: ref, removals: Array(additions[..<done.added]), additions: Array(removals[..<done.removed]))
    }

    /// Makes up to `limit` more of the change, removals first (so a device near a cap frees room before it takes).
    mutating func apply(_ connection: SQLiteConnection, instanceID: String, upTo limit: Int) throws {
        var budget = limit
        while budget > 0, done.removed < removals.count {
            try InterestSQL.unfollow(removals[done.removed], instanceID: instanceID, deviceRef: ref, on: connection)
            done.removed += 1
            budget -= 1
        }
        while budget > 0, done.added < additions.count {
            try InterestSQL.follow(additions[done.added], instanceID: instanceID, deviceRef: ref, on: connection)
            done.added += 1
            budget -= 1
        }
    }
}
