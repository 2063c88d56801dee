import Foundation
import Glibc
import Logging
import PushStore

/// Keeps the database files private: they hold device tokens, user ids and publish payloads.
///
/// A missing directory is created `0700` and a missing database file `0600` before SQLite opens it; SQLite gives
/// the `-wal` and `-shm` files it creates the database file's mode. Existing database files that other users may
/// read are tightened to `0600` (with a warning). An existing directory is left alone, since it may be shared
/// (the working directory, `/tmp`), but one that other users can enter is warned about.
enum DatabaseFiles {
    /// The files SQLite keeps next to the database.
    static let suffixes = ["", "-wal", "-shm", "-journal"]

    /// - Throws: `StoreUnavailableError(.cannotOpen)` when the directory or the file cannot be created.
    static func prepare(_ path: String, logger: Logger) throws {
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw StoreUnavailableError(
                    .cannotOpen, detail: "cannot create the database directory \(directory): \(error)")
            }
        } else if !isDirectory.boolValue {
            throw StoreUnavailableError(.cannotOpen, detail: "the database directory \(directory) is not a directory")
        } else if let mode = permissions(directory), mode & 0o077 != 0 {
            logger.warning(
                "The database directory is open to other users; make it 0700",
                [
                    "directory": directory, "mode": octal(mode),
                ])
        }

        if access(path, F_OK) != 0 {
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
            if fd >= 0 {
                close(fd)
            } else if errno != EEXIST {
                let reason = String(cString: strerror(errno))
                throw StoreUnavailableError(.cannotOpen, detail: "cannot create the database file \(path): \(reason)")
            }
        }

        for file in suffixes.map({ path + $0 }) {
            guard let mode = permissions(file), mode & 0o077 != 0 else { continue }
            if chmod(file, 0o600) == 0 {
                logger.warning("Tightened database file permissions to 0600", ["file": file, "was": octal(mode)])
            } else {
                logger.warning(
                    "Database file is open to other users and cannot be tightened; make it 0600",
                    [
                        "file": file, "mode": octal(mode), "error": String(cString: strerror(errno)),
                    ])
            }
        }
    }

    /// The permission bits of a regular file or directory, or nil when it does not exist.
    static func permissions(_ path: String) -> mode_t? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return info.st_mode & 0o777
    }

    static func octal(_ mode: mode_t) -> String { "0" + String(mode, radix: 8) }
}
