import Glibc

/// Whether the file system holding the database has room for more than the next small commit.
///
/// After a disk filled up, a failed commit can leave pages allocated at the end of the WAL, and a later commit
/// smaller than them fits there although the file system is still full: a one-page probe or a lease renewal
/// then succeeds while every registration fails. The writer therefore ends an outage only when a commit
/// succeeded *and* the file system has `minimumFreeBytes` free (see `WriterThread`), so `/ready` does not
/// flap to 200 on a disk that is still full (Tests/sdk/test_store_outage.py).
struct FileSystemRoom: Sendable {
    /// The database file; the file system is the one of its directory.
    let path: String
    /// Below this many bytes free to unprivileged users the disk counts as still full. 0 turns the check off.
    let minimumFreeBytes: Int64

    /// Free bytes available to unprivileged users, or nil when `statvfs` fails (the check then passes: an
    /// unknown answer must not keep a working store reported as failing).
    var freeBytes: Int64? {
        var info = statvfs()
        let directory = path.contains("/") ? String(path[..<path.lastIndex(of: "/")!]) : "."
        guard statvfs(directory.isEmpty ? "/" : directory, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }

    /// Whether the file system has at least `minimumFreeBytes` free (true when unknown or the check is off).
    var hasRoom: Bool {
        guard minimumFreeBytes > 0, let free = freeBytes else { return true }
        return free >= minimumFreeBytes
    }
}
