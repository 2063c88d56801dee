import CLinux
import Glibc

/// Listening sockets: IPv4, non-blocking, `SO_REUSEPORT` so each loop has its own accept queue and the kernel
/// spreads connections across loops.
enum Listener {
    static func bind(host: String, port: Int) throws -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        guard port >= 0 && port <= 65535, inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw HTTPServerError.invalid("bind", "invalid IPv4 address or port: \(host):\(port)")
        }
        let fd = try check("socket") {
            socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var one: Int32 = 1
            let size = socklen_t(MemoryLayout<Int32>.size)
            // SO_REUSEADDR: restart without waiting for TIME_WAIT; SO_REUSEPORT: one listener per loop.
            try check("setsockopt(SO_REUSEADDR)") { setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, size) }
            try check("setsockopt(SO_REUSEPORT)") { setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, size) }
            try check("bind") {
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                        Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                    }
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
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try check("getsockname") {
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
