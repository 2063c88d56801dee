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

    /// Whether a thread of this process that was lowered may go back to `normalNice`: decided once, at first use,
    /// from the effective capabilities and `RLIMIT_NICE` (`mayReturn(to:hasSysNice:niceLimit:)`). Neither changes
    /// while the server runs, and asking once keeps a sender's turn free of system calls.
    package static let mayReturnToNormal: Bool = {
        // `RLIMIT_NICE` is a macro over the enum case Swift imports as `__RLIMIT_NICE`.
        var limit = rlimit()
        let niceLimit = getrlimit(__rlimit_resource_t(__RLIMIT_NICE.rawValue), &limit) == 0 ? UInt64(limit.rlim_cur) : 0
        return mayReturn(to: normalNice, hasSysNice: hasSysNice(status: processStatus()), niceLimit: niceLimit)
    }()

    /// The kernel's rule for lowering a thread's nice value to `nice` (`setpriority(2)`, `getrlimit(2)`): allowed
    /// with `CAP_SYS_NICE`, or when `RLIMIT_NICE`'s soft limit `niceLimit` reaches it, the limit standing for the
    /// nice value `20 - niceLimit` (systemd's `LimitNICE=+0` is 20: back to nice 0, never below).
    package static func mayReturn(to nice: Int32, hasSysNice: Bool, niceLimit: UInt64) -> Bool {
        if hasSysNice { return true }
        // 40 reaches nice -20, the lowest there is; RLIM_INFINITY is larger still.
        return Int64(nice) >= 20 - Int64(min(niceLimit, 40))
    }

    /// Whether the `CapEff:` line of a `/proc/<pid>/status` text holds `CAP_SYS_NICE` (bit 23); false when the line
    /// is missing or unreadable.
    package static func hasSysNice(status: String) -> Bool {
        for line in status.split(separator: "\n") where line.hasPrefix("CapEff:") {
            let hex = line.dropFirst("CapEff:".count).filter { !$0.isWhitespace }
            guard let mask = UInt64(hex, radix: 16) else { return false }
            return mask & (1 << 23) != 0
        }
        return false
    }

    /// This process's `/proc/self/status` (empty when it cannot be read: no capability is assumed).
    private static func processStatus() -> String {
        let descriptor = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < 1 << 16 {
            let n = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// When a thread that carries many parties' transfers (a sender connection) runs at bulk priority: once it carries
/// `enterAt` transfers at once it is bulk work (a fan-out), and once it is down to `leaveAt` it goes back to normal
/// priority, so a connection that carries one instance's transactional pushes is never slowed by another's
/// campaign on other connections. The gap between the two keeps a connection from switching on every transfer.
///
/// Going back needs the right to lower a nice value (`ThreadPriority.mayReturnToNormal`). Without it the thread is
/// never lowered: it would stay at bulk priority for good after its first fan-out and carry every later
/// transactional push at a tenth of a core's weight, the very tail this protects. (Threads that do bulk work all
/// their life, the Web Push encryption workers and the trace exporter, never come back and are lowered anyway.)
/// Where a change is refused all the same (a sandbox without `setpriority`), `change(load:)` stops asking for it.
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
    /// Whether it may go back (false when the process lacks the right, or once the system refused).
    package private(set) var canRestore: Bool

    /// - Parameters:
    ///   - leaveAt: clamped below `enterAt`.
    ///   - canRestore: whether a lowered thread may go back to normal priority; without it, it is never lowered.
    ///     The process's own answer unless a test states one.
    package init(enterAt: Int, leaveAt: Int, canRestore: Bool = ThreadPriority.mayReturnToNormal) {
        self.enterAt = max(1, enterAt)
        self.leaveAt = min(max(0, leaveAt), self.enterAt - 1)
        self.canRestore = canRestore
    }

    /// The change `load` (transfers in progress) asks for, if any; the caller applies it and reports the outcome.
    package func change(load: Int) -> Change? {
        // Lowered only where it can come back.
        if !isLowered { return load >= enterAt && canLower && canRestore ? .lower : nil }
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
