import Foundation
import Locking

/// A throwaway PostgreSQL 15 cluster for tests: `initdb` into a temporary directory, `pg_ctl start` on a free
/// loopback port (`FreePort`; another one if it was taken meanwhile) with trust authentication, one database per
/// test (`createDatabase`), `pg_ctl -m immediate stop` and the directory removed when the test process exits.
///
/// The server refuses to run as root, so as root (CI) the directory is given to the `postgres` user and
/// `initdb`/`pg_ctl` run through `runuser -u postgres`; otherwise they run as the current user. Tests connect over
/// TCP as the `postgres` role. Binaries come from `PUSH_TEST_PG_BIN`, default `/usr/lib/postgresql/15/bin`
/// (Debian's `postgresql-15`).
package final class PostgreSQLCluster: Sendable {
    /// Why a cluster could not be used.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package let directory: URL
    package let port: Int
    /// The server's `postgres` binary directory.
    package let binDirectory: String
    /// Whether the server fsyncs (benchmarks); tests run without.
    package let fsync: Bool
    private let stopped = Locked(false)

    /// `PUSH_TEST_PG_BIN`, else Debian's PostgreSQL 15.
    package static var defaultBinDirectory: String {
        if let path = ProcessInfo.processInfo.environment["PUSH_TEST_PG_BIN"], !path.isEmpty { return path }
        return "/usr/lib/postgresql/15/bin"
    }

    /// Whether `initdb` and `pg_ctl` are installed.
    package static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: defaultBinDirectory + "/initdb")
            && FileManager.default.isExecutableFile(atPath: defaultBinDirectory + "/pg_ctl")
    }

    /// Whether a missing PostgreSQL must fail the tests instead of skipping them: in CI (`CI=true`), so that CI can
    /// never silently test one backend.
    package static var isRequired: Bool { ProcessInfo.processInfo.environment["CI"] == "true" }

    private static let sharedCluster = Locked<Result<PostgreSQLCluster, Failure>?>(nil)

    /// The test process's one cluster, started on first use (about 3 s) and stopped at exit.
    package static func shared() throws -> PostgreSQLCluster {
        try sharedCluster.withLock { cached in
            if let cached { return try cached.get() }
            let result = Result<PostgreSQLCluster, Failure> { () throws(Failure) -> PostgreSQLCluster in try start() }
            cached = result
            if case .success = result { atexit { PostgreSQLCluster.stopShared() } }
            return try result.get()
        }
    }

    private static func stopShared() {
        if case .success(let cluster)? = sharedCluster.withLock({ $0 }) { cluster.stop() }
    }

    /// Starts a new cluster. - Throws: `Failure` with the tools' output.
    /// - Parameter fsync: `true` for benchmarks (a durable commit costs an fsync, as in production); tests leave it
    ///   off, trading durability against power loss for speed.
    package static func start(binDirectory: String = defaultBinDirectory, fsync: Bool = false) throws(Failure)
        -> PostgreSQLCluster
    {
        guard FileManager.default.isExecutableFile(atPath: binDirectory + "/initdb") else {
            throw Failure(
                description: "PostgreSQL is not installed at \(binDirectory) (apt-get install postgresql, or "
                    + "set PUSH_TEST_PG_BIN)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("push-pg-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "cannot create \(directory.path): \(error)")
        }
        if getuid() == 0 {
            try run("/bin/chown", ["postgres:postgres", directory.path])
        }
        var cluster = PostgreSQLCluster(
            directory: directory, port: try freePort(), binDirectory: binDirectory, fsync: fsync)
        do throws(Failure) {
            try cluster.runServerTool(
                "initdb",
                [
                    "-D", cluster.dataDirectory, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C",
                    "--no-sync",
                ])
            // A port another test process took since it was picked (FreePort) is replaced by another, a few times.
            // Only here: a restart (`startServer` after `stopServer`) keeps the port the connection strings name.
            for attempt in 1...5 {
                let logged = cluster.serverLog().count
                do throws(Failure) {
                    try cluster.startServer()
                    return cluster
                } catch {
                    guard attempt < 5, cluster.serverLog().dropFirst(logged).contains(FreePort.addressInUse) else {
                        throw error
                    }
                }
                cluster = PostgreSQLCluster(
                    directory: directory, port: try freePort(), binDirectory: binDirectory, fsync: fsync)
            }
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return cluster
    }

    /// The server's log (`pg_ctl -l`), empty before it exists.
    private func serverLog() -> String {
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent("log").path) else {
            return ""
        }
        return String(decoding: data, as: UTF8.self)
    }

    private var dataDirectory: String { directory.appendingPathComponent("data").path }

    /// Starts the server (again, after `stopServer`), waiting until it accepts connections.
    package func startServer() throws(Failure) {
        // fsync off for tests: durability against power loss traded for speed (never for benchmarks, which get
        // the settings docs/BENCHMARKS.md names instead); commits still reach the WAL before they are acknowledged,
        // so a server crash (`stopServer`) loses none.
        let options =
            "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1 -c max_connections=200 "
            + (fsync ? "-c shared_buffers=256MB -c max_wal_size=4GB" : "-c fsync=off")
        try runServerTool(
            "pg_ctl",
            [
                "-D", dataDirectory, "-l", directory.appendingPathComponent("log").path, "-w", "-t", "60", "-o",
                options,
                "start",
            ])
    }

    /// Stops the server the way a crash or a failover would (`-m immediate`: sessions cut, no shutdown
    /// checkpoint); the data stays for `startServer`.
    package func stopServer() throws(Failure) {
        try runServerTool("pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
    }

    private init(directory: URL, port: Int, binDirectory: String, fsync: Bool) {
        self.directory = directory
        self.port = port
        self.binDirectory = binDirectory
        self.fsync = fsync
    }

    /// Stops the server at once (`-m immediate`) and removes its directory. Idempotent.
    package func stop() {
        let first = stopped.withLock { stopped in
            defer { stopped = true }
            return !stopped
        }
        guard first else { return }
        try? stopServer()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A libpq connection string for `database`.
    package func connectionString(database: String) -> String {
        "host=127.0.0.1 port=\(port) user=postgres dbname=\(database) sslmode=disable"
    }

    /// Creates a database with a fresh random name. - Returns: its name.
    package func createDatabase(prefix: String = "t") throws(Failure) -> String {
        let name = "\(prefix)_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())"
        _ = try sql("CREATE DATABASE \(name)", database: "postgres")
        return name
    }

    /// Drops `database`, ending its sessions first.
    package func dropDatabase(_ database: String) throws(Failure) {
        _ = try sql("DROP DATABASE IF EXISTS \(database) WITH (FORCE)", database: "postgres")
    }

    /// Runs SQL with `psql` (unaligned, tuples only). - Returns: its output.
    @discardableResult
    package func sql(_ statement: String, database: String) throws(Failure) -> String {
        try Self.run(
            binDirectory + "/psql",
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String(port), "-U",
                "postgres",
                "-d", database, "-c", statement,
            ])
    }

    /// Ends every session of `database` whose `application_name` is `application` (a lost connection, as the
    /// server's crash or an administrator would cause). - Returns: how many were ended.
    @discardableResult
    package func terminateSessions(database: String, application: String = "push-server") throws(Failure) -> Int {
        let output = try sql(
            """
            SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = '\(database)' AND application_name = '\(application)'
            """, database: "postgres")
        return Int(output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// Runs `initdb`/`pg_ctl` (as `postgres` when root) through a shell that first closes every descriptor above
    /// stderr: Foundation's `Process` notices a child's exit through a socket the child inherits, and the server
    /// `pg_ctl start` leaves running would inherit it too, so the start would never be seen to finish.
    private func runServerTool(_ tool: String, _ arguments: [String]) throws(Failure) {
        let path = binDirectory + "/" + tool
        let command =
            getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--", path] + arguments : [path] + arguments
        let closeInherited =
            #"for fd in /proc/$$/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null; done; exec "$@""#
        try Self.run("/bin/bash", ["-c", closeInherited, "bash"] + command)
    }

    /// Runs a tool to completion. - Returns: stdout. - Throws: `Failure` with stderr on a non-zero exit.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws(Failure) -> String {
        do {
            return try ChildProcess.checked(executable, arguments)
        } catch {
            throw Failure(description: error.description)
        }
    }

    /// A loopback port below the ephemeral range that nothing listens on right now (`FreePort`).
    static func freePort() throws(Failure) -> Int {
        do {
            return try FreePort.pick()
        } catch {
            throw Failure(description: error.description)
        }
    }
}
