import CLinux
import Glibc

/// One client connection: its socket, optional TLS session, parser and per-request bookkeeping.
///
/// Confined to the thread of the loop that accepted it; the loop drives it (see `EventLoop+Connection.swift`).
final class Connection {
    enum Phase {
        /// TLS handshake in progress.
        case handshaking
        /// Between requests (or before the first one); no request byte buffered.
        case idle
        case readingHead
        case readingBody
        /// The handler task runs; reads continue into the buffer (bounded) but nothing is parsed.
        case handling
        /// A response is being written.
        case writing
        /// After a `Connection: close` response: our side is shut down, we discard input until EOF or timeout,
        /// so the client reads the response instead of a reset.
        case lingering
    }

    enum IOResult {
        case bytes(Int)
        case wouldBlock
        case eof
        case failed
    }

    let fd: Int32
    let id: UInt64
    let peer: String
    /// The peer's IP address without the port (what per-client limits key on).
    let address: String
    let tls: TLSSession?
    var parser: RequestParser
    var phase: Phase
    /// Monotonic ns; 0 means none. Set per phase, never pushed back by arriving bytes.
    var deadline: UInt64 = 0
    var out: [UInt8] = []
    var outOffset = 0
    var readEOF = false
    var readPaused = false
    var tlsWantsWrite = false
    var registeredEvents: UInt32 = 0
    var closed = false
    var inProcess = false
    var reprocess = false
    var requestCount = 0
    var closeAfterWrite = false

    // The current request, for routing, the response and the access log.
    var head: RequestHead?
    var match: Router.Match?
    var routePattern = "-"
    var requestID = ""
    var requestStart: UInt64 = 0
    var consumedAtStart = 0
    var responseStatus = 0
    var responseBytes = 0

    init(fd: Int32, id: UInt64, peer: String, address: String, tls: TLSSession?, limits: RequestParser.Limits) {
        self.fd = fd
        self.id = id
        self.peer = peer
        self.address = address
        self.tls = tls
        self.parser = RequestParser(limits: limits)
        self.phase = tls == nil ? .idle : .handshaking
    }

    var outputPending: Bool { outOffset < out.count }

    func receive(_ buffer: UnsafeMutableRawBufferPointer) -> IOResult {
        if let tls {
            switch tls.read(buffer) {
            case .bytes(let n):
                tlsWantsWrite = false
                return .bytes(n)
            case .wantRead:
                tlsWantsWrite = false
                return .wouldBlock
            case .wantWrite:
                tlsWantsWrite = true
                return .wouldBlock
            case .closed: return .eof
            // Includes an unclean TCP close without close_notify: nothing more can be read either way.
            case .failed: return .failed
            }
        }
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n > 0 { return .bytes(n) }
            if n == 0 { return .eof }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed
            }
        }
    }

    func send(_ buffer: UnsafeRawBufferPointer) -> IOResult {
        if let tls {
            switch tls.write(buffer) {
            case .bytes(let n): return .bytes(n)
            case .wantRead, .wantWrite: return .wouldBlock
            case .closed, .failed: return .failed
            }
        }
        while true {
            // MSG_NOSIGNAL: a client that closed early must not kill the process with SIGPIPE.
            let n = Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
            if n >= 0 { return .bytes(n) }
            switch errno {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return .wouldBlock
            default: return .failed
            }
        }
    }
}
