import Glibc
import Locking
import PushStore

/// An exclusive `flock` on `<database>.lock`, held while a store has the database open.
///
/// SQLite's own locks let several processes share a WAL database, so nothing else tells a starting server
/// whether another one still runs on the same file. This lock does: a second store fails to open instead of
/// sharing, and a store that holds it knows every publish lease it finds was held by a process that is gone (the
/// kernel drops the lock with the last descriptor, also on `kill -9`). A separate file, not the database itself,
/// because on file systems that emulate `flock` with POSIX locks it would collide with SQLite's byte-range locks.
final class DatabaseLock: Sendable {
    /// The lock file's descriptor; nil once released.
    private let descriptor: Locked<Int32?>
    let path: String

    /// Takes the lock without waiting; the file is created `0600` when missing.
    /// - Throws: `StoreUnavailableError(.busy)` when another process (or another open store) holds it,
    ///   `.cannotOpen` when the file cannot be opened.
    init(database: String) throws {
        path = database + ".lock"
        var fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        // `flock` needs no write access: on a read-only file system an existing lock file still serves, and the
        // writer then reports the database itself as read-only.
        if fd < 0 && (errno == EROFS || errno == EACCES) { fd = open(path, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else {
            let reason = errno
            throw StoreUnavailableError(
                reason == EROFS ? .readOnly : .cannotOpen,
                detail: "cannot open the lock file \(path): \(String(cString: strerror(reason)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            close(fd)
            if reason == EWOULDBLOCK {
                throw StoreUnavailableError(
                    .busy,
                    detail: "another push-server process has the database open "
                        + "(it holds \(path)); one database serves one process")
            }
            throw StoreUnavailableError(
                .cannotOpen, detail: "cannot lock \(path): \(String(cString: strerror(reason)))")
        }
        descriptor = Locked(fd)
    }

    deinit { release() }

    /// Drops the lock (closing the descriptor). Idempotent.
    func release() {
        descriptor.withLock { fd in
            if let open = fd { close(open) }
            fd = nil
        }
    }
}
