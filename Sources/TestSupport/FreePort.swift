import Foundation

/// A free loopback TCP port for a child process a test starts on a port of the test's choosing (a PostgreSQL
/// cluster); the twin of `Tests/Support/free_port.py`.
///
/// Why not the kernel's pick for port 0: that comes from the ephemeral range (`ip_local_port_range`), where every
/// outgoing connection's source port comes from too, so under parallel tests a port picked that way and handed to
/// a child a moment later can already be the source port of some connection, and the child's bind fails with
/// EADDRINUSE. These ports are below that range, chosen at random and bound once to check that nothing listens on
/// them. Two test processes can still draw the same one: a caller that starts a server retries with another port
/// when the server reports `Address already in use` (`PostgreSQLCluster.start` does).
package enum FreePort {
    /// Why no port could be had.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// What a child process reports when its port was taken (strerror(EADDRINUSE)).
    package static let addressInUse = "Address already in use"

    /// A port below the ephemeral range that 127.0.0.1 can bind now (the kernel's own pick if none of 64 tries is).
    package static func pick() throws(Failure) -> Int {
        let high = ephemeralLow() - 1
        let low = max(1024, high - 12_000)
        if low < high {
            for _ in 0..<64 {
                let port = Int.random(in: low...high)
                if let bound = try bind(port: port) { return bound }
            }
        }
        guard let bound = try bind(port: 0) else { throw Failure(description: "bind() to port 0 failed") }
        return bound
    }

    /// The first port of the ephemeral range, 32768 (Linux's default) if it cannot be read.
    static func ephemeralLow() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8),
            let first = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).first,
            let low = Int(first)
        else { return 32_768 }
        return low
    }

    /// Binds a socket to 127.0.0.1:`port` and closes it. - Returns: the port bound (the kernel's pick for 0), or nil
    /// when the port is taken.
    private static func bind(port: Int) throws(Failure) -> Int? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { return nil }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname() failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
