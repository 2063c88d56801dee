import Foundation

/// Speaks systemd's notify protocol (sd_notify(3)) over `$NOTIFY_SOCKET` without libsystemd: one datagram per
/// message on an AF_UNIX socket (a leading `@` names an abstract socket).
///
/// Without `NOTIFY_SOCKET` (not started by systemd) every call is a no-op.
package struct SystemdNotifier: Sendable {
    private let socketPath: String?
    /// Half of `WATCHDOG_USEC`, as sd_watchdog_enabled(3) recommends; nil when the watchdog is off or meant for
    /// another process (`WATCHDOG_PID`).
    package let watchdogInterval: Duration?

    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        if let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0, path != nil,
            environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true
        {
            watchdogInterval = .microseconds(Int64(usec / 2))
        } else {
            watchdogInterval = nil
        }
    }

    package var isEnabled: Bool { socketPath != nil }

    /// `READY=1` once the server accepts requests.
    package func ready(status: String? = nil) { send("READY=1" + (status.map { "\nSTATUS=\($0)" } ?? "")) }
    /// `STOPPING=1` when draining starts.
    package func stopping() { send("STOPPING=1") }
    /// `WATCHDOG=1` keep-alive.
    package func watchdog() { send("WATCHDOG=1") }
    /// `STATUS=…`, shown by `systemctl status`.
    package func status(_ text: String) { send("STATUS=\(text)") }

    /// Sends one datagram; returns false on failure (notification is best effort, never fatal).
    @discardableResult
    package func send(_ message: String) -> Bool {
        guard let socketPath else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var pathBytes = Array(socketPath.utf8)
        let abstract = pathBytes.first == UInt8(ascii: "@")
        if abstract { pathBytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard pathBytes.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: pathBytes)
        }
        // Abstract addresses are length-delimited, not NUL-terminated.
        let length = MemoryLayout<sa_family_t>.size + pathBytes.count + (abstract ? 0 : 1)
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                bytes.withUnsafeBytes { buffer in
                    sendto(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), sa, socklen_t(length))
                }
            }
        }
        return sent == bytes.count
    }
}
