import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Threads named where operators look: `top -H`, `perf`, `/proc/<pid>/task/*/comm`. This Linux Foundation keeps a
/// `Thread.name` set before `start()` to itself (every thread showed the process's name in `/proc`), and Glibc's
/// module does not export `pthread_setname_np`, so the thread names itself through `/proc/thread-self/comm` first.
package enum NamedThread {
    /// The most bytes of a name the kernel keeps (16 with the terminating zero); longer names are cut.
    package static let maxNameBytes = 15

    /// Starts `body` on a new thread named `name` (also its `Thread.name`), with `stackSize` bytes of stack when
    /// given.
    package static func start(_ name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            nameCurrent(name)
            body()
        }
        thread.name = name
        if let stackSize { thread.stackSize = stackSize }
        thread.start()
    }

    /// Sets the calling thread's OS-level name to the first `maxNameBytes` bytes of `name`. Best effort: a
    /// sandbox without `/proc` leaves the name as it was.
    package static func nameCurrent(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(maxNameBytes))
        _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
    }
}
