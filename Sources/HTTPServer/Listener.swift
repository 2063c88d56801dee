import CLinux
import Glibc

/// Listening sockets: IPv4 or IPv6, non-blocking, `SO_REUSEPORT` so each loop has its own accept queue and the
/// kernel spreads connections across loops.
enum Listener {
    /// Fails with `EADDRINUSE` when any socket already listens on the port, `SO_REUSEPORT` or not.
    ///
    /// `SO_REUSEPORT` would otherwise let a second server process (a stale instance, another config) bind the same
    /// port silently, and the kernel would split clients between two servers with two different databases.
    static func ensureAvailable(host: String, port: Int) throws {
        close(try bind(host: host, port: port, reusePort: false))
    }

    static func bind(host: String, port: Int, reusePort: Bool = true) throws -> Int32 {
        guard port >= 0 && port <= 65535 else { throw HTTPServerError.invalid("bind", "invalid port \(port)") }
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, host, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeBytes(of: v4) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            family = AF_INET
        } else if inet_pton(AF_INET6, host, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            withUnsafeBytes(of: v6) { bytes in withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: bytes) } }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
            family = AF_INET6
        } else {
            throw HTTPServerError.invalid("bind", "not an IPv4 or IPv6 address: \(host)")
        }
        let fd = try check("socket") {
            socket(family, Int32(SOCK_STREAM.rawValue | SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var one: Int32 = 1
            let size = socklen_t(MemoryLayout<Int32>.size)
            // SO_REUSEADDR: restart without waiting for TIME_WAIT; SO_REUSEPORT: one listener per loop.
            try check("setsockopt(SO_REUSEADDR)") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, size) }
            if reusePort {
                try check("setsockopt(SO_REUSEPORT)") { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, size) }
            }
            try check("bind") {
                withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.bind(fd, $0, length) }
                }
            }
            try check("listen") { listen(fd, 4096) }
            return fd
        } catch {
            close(fd)
            throw error
        }
    }

    static func boundPort(_ fd: Int32) throws -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        try check("getsockname") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        return describe(storage).port
    }

    /// The peer's address for the per-address limits; nil for a family other than IPv4 and IPv6.
    static func peerAddress(_ storage: sockaddr_storage) -> PeerAddress? {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET6:
            var v6 = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            return PeerAddress(bytes: withUnsafeBytes(of: &v6.sin6_addr) { Array($0) })
        case AF_INET:
            var v4 = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            return PeerAddress(bytes: withUnsafeBytes(of: &v4.sin_addr) { Array($0) })
        default:
            return nil
        }
    }

    /// `ip:port` (IPv6 as `[ip]:port`) of a peer or local address, and the bare address (`ip`).
    static func describe(_ storage: sockaddr_storage) -> (text: String, address: String, port: Int) {
        var storage = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let port: UInt16
        let isV6 = Int32(storage.ss_family) == AF_INET6
        if isV6 {
            var v6 = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            inet_ntop(AF_INET6, &v6.sin6_addr, &text, socklen_t(text.count))
            port = UInt16(bigEndian: v6.sin6_port)
        } else {
            var v4 = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            inet_ntop(AF_INET, &v4.sin_addr, &text, socklen_t(text.count))
            port = UInt16(bigEndian: v4.sin_port)
        }
        let host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (isV6 ? "[\(host)]:\(port)" : "\(host):\(port)", host, Int(port))
    }
}
