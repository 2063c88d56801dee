import Glibc

/// Wakes a dedicated thread that waits on file descriptors (`poll`), from any thread: a pipe whose read end becomes
/// readable once `signal()` was called and stays so (nothing reads it). A pipe, not an eventfd, so this lowest
/// target needs no C shim. A thread that must stop when told waits on it beside its
/// socket, instead of waking every so often to look at a flag: a stop then takes effect at once, and an idle
/// thread costs no wake-ups.
///
/// One-shot by design (it is never drained): its users signal it once, to stop.
package final class ThreadWakeup: Sendable {
    /// The pipe's read end (polled) and write end; -1 when it could not be made (waits then only time out).
    private let descriptor: Int32
    private let writeEnd: Int32

    package init() {
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            }
        }
        descriptor = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
        if writeEnd >= 0 { close(writeEnd) }
    }

    /// Wakes every present and future wait. Safe to call more than once: the write end is non-blocking, and a
    /// full pipe refusing a byte changes nothing, since one byte already wakes.
    package func signal() {
        guard writeEnd >= 0 else { return }
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }

    /// What ended a wait.
    package enum Outcome: Sendable, Equatable {
        /// `signal()` was called.
        case signalled
        /// The other descriptor is readable (or has an error or hang-up for its owner to read).
        case readable
        /// The timeout passed.
        case timedOut
        /// `poll` failed with this errno (EINTR is retried, never returned).
        case failed(Int32)
    }

    /// Blocks until `signal()`, until `other` (when given) is readable, or until `timeout` passed (nil: no limit).
    /// A signal wins over a readable `other`, so a stopping thread stops.
    package func wait(orReadable other: Int32? = nil, timeout: Duration? = nil) -> Outcome {
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        if let other { descriptors.append(pollfd(fd: other, events: Int16(POLLIN), revents: 0)) }
        let milliseconds: Int32 = timeout.map { Self.milliseconds($0) } ?? -1
        while true {
            let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                return .failed(errno)
            }
            if ready == 0 { return .timedOut }
            if descriptors[0].revents != 0 { return .signalled }
            return .readable
        }
    }

    /// `duration` in whole milliseconds, rounded up (a 0.5 ms wait must not become a busy 0) and capped at Int32.
    package static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let total = seconds.multipliedReportingOverflow(by: 1000)
        guard !total.overflow else { return Int32.max }
        let millis = total.partialValue + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: millis)
    }
}
