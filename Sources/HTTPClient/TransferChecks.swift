import CLibCurl
import Glibc

/// What an `HTTPExchangeTransfer` checks while curl runs one request: the response size cap, the destination policy on every socket curl opens, and which
/// `HTTPExchangeError` a failed transfer's `CURLcode` becomes.
///
/// A value inside the transfer that owns it, so touched only on that transfer's loop thread.
struct TransferChecks {
    /// The URL asked for; errors name it redacted.
    let target: HTTPURL
    /// Judges every address curl is about to connect to; nil: no check (and no socket callback installed).
    let policy: DestinationPolicy?
    /// Response headers plus body; more aborts the transfer.
    let maxResponseBytes: Int

    /// Response bytes (headers and body) seen so far.
    private var received = 0
    private var tooLarge = false
    /// Why the first refused address was refused; reported only if no allowed address was tried.
    private var refusal: String?
    private var triedAllowedAddress = false

    init(target: HTTPURL, policy: DestinationPolicy?, maxResponseBytes: Int) {
        self.target = target
        self.policy = policy
        self.maxResponseBytes = maxResponseBytes
    }

    /// Counts response bytes; false (abort) once they pass the cap.
    mutating func count(_ bytes: Int) -> Bool {
        received += bytes
        if received > maxResponseBytes { tooLarge = true }
        return !tooLarge
    }

    /// The destination check, on the exact address curl is about to connect to (after its DNS lookup; also for
    /// every address Happy Eyeballs tries): a refused address gets no socket, so nothing is sent to it.
    mutating func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        guard let policy else { return CURL_SOCKET_BAD }  // the callback is only installed with a policy
        guard let ip = Self.address(of: address) else {
            if refusal == nil { refusal = "address family \(address.pointee.family) is not IPv4 or IPv6" }
            return CURL_SOCKET_BAD
        }
        switch policy.verdict(for: ip, host: target.host) {
        case .refused(let range):
            if refusal == nil { refusal = "\(ip) is \(range)" }
            return CURL_SOCKET_BAD
        case .allowed:
            triedAllowedAddress = true
            let type = address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue)
            return socket(address.pointee.family, type, address.pointee.protocol)
        }
    }

    /// Why a transfer that curl reported done with `code` (not `CURLE_OK`) failed: a refused destination first
    /// (when no allowed address was even tried), then the size cap, then curl's own reason.
    func failure(_ code: CURLcode, curl: CurlEasy) -> HTTPExchangeError {
        if let refusal, !triedAllowedAddress {
            return HTTPExchangeError(.refusedDestination, "\(target.redacted) refused: \(refusal)")
        }
        if tooLarge || code == CURLE_FILESIZE_EXCEEDED {
            return HTTPExchangeError(
                .responseTooLarge, "\(target.redacted): response larger than \(maxResponseBytes) bytes")
        }
        let detail = curl.errorMessage(code)
        switch code {
        case CURLE_OPERATION_TIMEDOUT: return HTTPExchangeError(.timeout, "\(target.redacted): \(detail)")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return HTTPExchangeError(.invalidURL, "\(target.redacted): \(detail)")
        default: return HTTPExchangeError(.connection, "\(target.redacted): \(detail)")
        }
    }

    /// The IP address inside curl's socket address; nil for other families or a short `addrlen`.
    static func address(of address: UnsafeMutablePointer<curl_sockaddr>) -> IPAddress? {
        guard let offset = MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr) else { return nil }
        let raw = UnsafeRawPointer(address).advanced(by: offset)
        let length = Int(address.pointee.addrlen)
        switch address.pointee.family {
        case AF_INET where length >= MemoryLayout<sockaddr_in>.size:
            let ipv4 = raw.loadUnaligned(as: sockaddr_in.self)
            return withUnsafeBytes(of: ipv4.sin_addr) { IPAddress(bytes: Array($0)) }
        case AF_INET6 where length >= MemoryLayout<sockaddr_in6>.size:
            let ipv6 = raw.loadUnaligned(as: sockaddr_in6.self)
            return withUnsafeBytes(of: ipv6.sin6_addr) { IPAddress(bytes: Array($0)) }
        default:
            return nil
        }
    }
}
