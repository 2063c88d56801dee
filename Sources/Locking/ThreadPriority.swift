import Glibc

/// The OS scheduling priority (nice value) of the calling thread. On Linux the nice value belongs to a thread, not
/// to the process (`setpriority(2)`, NOTES: under NPTL `PRIO_PROCESS` with `who` 0 is the calling thread), so a
/// dedicated thread that does bulk work (a fan-out's sender connection, the WAL checkpoints, Web Push encryption)
/// can run below the threads that answer requests and write the store, which keep the process's own priority: on
/// a busy machine the scheduler then gives a waking request thread the CPU first, and the bulk threads the rest
/// (issue 25: one instance's 100,000-device fan-out must not lengthen another instance's request tail).
///
/// Any process may raise its threads' nice values; lowering one again needs `RLIMIT_NICE` (or `CAP_SYS_NICE`).
/// Both answer whether they took effect and never throw: a thread that stays at normal priority still works, and
/// a sandbox that refuses `setpriority` (docs/OPERATIONS.md, "Thread priorities") only turns this off.
package enum ThreadPriority {
    /// The nice value bulk threads run at: weight 110 against a normal thread's 1,024, so a request thread that
    /// competes with a bulk thread for a core gets about nine tenths of it, and an idle machine runs both at full
    /// speed (nice shares the CPU, it never leaves it idle).
    package static let bulkNice: Int32 = 10

    /// The calling thread's nice value (`normalNice` when it cannot be read).
    package static var currentNice: Int32 {
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0)
        return value == -1 && errno != 0 ? normalNice : value
    }

    /// The nice value of a thread that was never lowered: the process's own, its main thread's (0 unless started
    /// under `nice`). Read by the process id, whose thread is the main thread, not from the calling thread, which may
    /// be lowered already (or was started by a lowered one, whose nice value a new thread inherits).
    package static let normalNice: Int32 = {
        errno = 0
        let value = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(getpid()))
        return value == -1 && errno != 0 ? 0 : value
    }()

    /// Sets the calling thread's nice value to `nice`. - Returns: whether it now has that value (false when the
    /// system refused: lowering a nice value without the right to, or a sandbox that forbids the call).
    @discardableResult
    package static func setCurrent(nice: Int32) -> Bool {
        if currentNice == nice { return true }
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) == 0 && currentNice == nice
    }

    /// Moves the calling thread to `bulkNice` (never to a higher priority than it has). - Returns: whether it runs
    /// at bulk priority now.
    @discardableResult
    package static func lowerCurrentToBulk() -> Bool {
        let now = currentNice
        let target = BulkPriority.bulkTarget(current: now, bulk: bulkNice)
        return target == now || setCurrent(nice: target)
    }
}

/// When a thread that carries many parties' transfers (a sender connection) runs at bulk priority: once it carries
/// `enterAt` transfers at once it is bulk work (a fan-out), and once it is down to `leaveAt` it goes back to normal
/// priority, so a connection that carries one instance's transactional pushes is never slowed by another's
/// campaign on other connections. The gap between the two keeps a connection from switching on every transfer.
/// Going back needs the right to lower a nice value (`ThreadPriority`); where the system refuses, the thread stays
/// at bulk priority, and `change(load:)` stops asking (likewise for lowering, where a sandbox refuses it).
package struct BulkPriority: Sendable, Equatable {
    /// A change the thread should make.
    package enum Change: Sendable, Equatable {
        case lower
        case restore
    }

    /// Transfers at once that make the thread bulk work.
    package let enterAt: Int
    /// Transfers at or below which it goes back to normal priority.
    package let leaveAt: Int
    /// Whether the thread runs at bulk priority now.
    package private(set) var isLowered = false
    /// Whether it may still be lowered (false once the system refused: a sandbox without `setpriority`).
    package private(set) var canLower = true
    /// Whether it may still go back (false once the system refused).
    package private(set) var canRestore = true

    /// - Parameters: `leaveAt` is clamped below `enterAt`.
    package init(enterAt: Int, leaveAt: Int) {
        self.enterAt = max(1, enterAt)
        self.leaveAt = min(max(0, leaveAt), self.enterAt - 1)
    }

    /// The change `load` (transfers in progress) asks for, if any; the caller applies it and reports the outcome.
    package func change(load: Int) -> Change? {
        if !isLowered { return load >= enterAt && canLower ? .lower : nil }
        return load <= leaveAt && canRestore ? .restore : nil
    }

    /// Records what applying `change` did.
    package mutating func applied(_ change: Change, succeeded: Bool) {
        switch change {
        case .lower:
            // A thread that could not be lowered stays a normal one, and stops asking: the call runs on a
            // sender's every turn.
            isLowered = succeeded
            if !succeeded { canLower = false }
        case .restore:
            if succeeded {
                isLowered = false
            } else {
                canRestore = false
            }
        }
    }

    /// The nice value a thread at `current` moves to for bulk work: `bulk`, or `current` when that is already lower
    /// priority (a process started under `nice 15` keeps 15).
    package static func bulkTarget(current: Int32, bulk: Int32) -> Int32 { max(current, bulk) }

    /// Applies `change(load:)` to the calling thread.
    package mutating func follow(load: Int) {
        guard let change = change(load: load) else { return }
        let succeeded: Bool
        switch change {
        case .lower: succeeded = ThreadPriority.lowerCurrentToBulk()
        case .restore: succeeded = ThreadPriority.setCurrent(nice: ThreadPriority.normalNice)
        }
        applied(change, succeeded: succeeded)
    }
}
