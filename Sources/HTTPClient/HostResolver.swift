import Clocks
import Dispatch
import Glibc
import Locking

/// Resolves a host name to its addresses with the system resolver (`getaddrinfo`, which also reads every IPv4
/// spelling `inet_aton` knows: `2130706433`, `0x7f.1`, `0177.0.0.1`), on a Dispatch thread so that no Swift task
/// blocks; an answer later than `timeout` is given up on (the lookup itself cannot be cancelled and finishes in
/// the background).
///
/// At most `maxConcurrentLookups` lookups run at once (each blocks a thread until the system resolver answers, which
/// a timeout does not shorten): beyond that `resolve` fails at once with `.busy`, so a flood of registrations naming
/// slow domains cannot take every Dispatch worker thread.
///
/// For a cheap refusal at registration only: what a request finally connects to is judged again on the socket
/// (`TransferChecks.openSocket`), so a name that resolves differently later (DNS rebinding) gains nothing.
package enum HostResolver {
    /// Why no address came back.
    package enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// `getaddrinfo` failed (no such name, no address, resolver failure) with this `gai_strerror` text.
        case notResolved(String)
        case timedOut
        /// `maxConcurrentLookups` lookups are running; nothing was asked.
        case busy

        package var description: String {
            switch self {
            case .notResolved(let reason): return "does not resolve (\(reason))"
            case .timedOut: return "did not resolve in time"
            case .busy: return "could not be resolved now (too many lookups at once)"
            }
        }
    }

    /// Lookups blocking a thread at most, process-wide.
    package static let maxConcurrentLookups = 16
    private static let running = Locked(0)
    private static let queue = DispatchQueue(label: "host-resolver", attributes: .concurrent)

    /// Every address of `host` (a name, or an address literal without brackets), de-duplicated, in resolver order.
    package static func resolve(_ host: String, timeout: Duration = .seconds(3)) async -> Result<[IPAddress], Failure> {
        let admitted = running.withLock { count -> Bool in
            guard count < maxConcurrentLookups else { return false }
            count += 1
            return true
        }
        guard admitted else { return .failure(.busy) }
        let once = Locked<CheckedContinuation<Result<[IPAddress], Failure>, Never>?>(nil)
        return await withCheckedContinuation { continuation in
            once.withLock { $0 = continuation }
            @Sendable func finish(_ result: Result<[IPAddress], Failure>) {
                once.withLock { pending -> CheckedContinuation<Result<[IPAddress], Failure>, Never>? in
                    defer { pending = nil }
                    return pending
                }?.resume(returning: result)
            }
            queue.async {
                let result = lookup(host)
                running.withLock { $0 -= 1 }
                finish(result)
            }
            MonotonicTimer.schedule(after: timeout) { finish(.failure(.timedOut)) }
        }
    }

    /// The blocking lookup.
    static func lookup(_ host: String) -> Result<[IPAddress], Failure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, "443", &hints, &list)
        guard status == 0, let first = list else {
            return .failure(.notResolved(String(cString: gai_strerror(status))))
        }
        defer { freeaddrinfo(first) }
        var addresses: [IPAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let entry = node {
            if let address = entry.pointee.ai_addr {
                var found: IPAddress?
                switch entry.pointee.ai_family {
                case AF_INET:
                    let ipv4 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
                    found = withUnsafeBytes(of: ipv4.sin_addr) { IPAddress(bytes: Array($0)) }
                case AF_INET6:
                    let ipv6 = UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
                    found = withUnsafeBytes(of: ipv6.sin6_addr) { IPAddress(bytes: Array($0)) }
                default:
                    break
                }
                if let found, !addresses.contains(found) { addresses.append(found) }
            }
            node = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else { return .failure(.notResolved("no IPv4 or IPv6 address")) }
        return .success(addresses)
    }
}
