import CLinux
import Glibc

/// One client connection: its socket, optional TLS session and protocol state machine.
///
/// Confined to the thread of the loop that accepted it. The state machine decides; the loop performs its actions
/// with the I/O below (see `EventLoop+Connection.swift`).
final class Connection {
    enum IOResult {
        case bytes(Int)
        case wouldBlock
        case eof
        case failed
    }

    let fd: Int32
    let id: UInt64
    let tls: TLSSession?
    var machine: HTTPConnectionStateMachine
    /// The epoll events the socket is registered for.
    var registeredEvents: UInt32 = 0
    var closed = false
    /// The address `AddressTable` counts this connection under; nil for an exempt address (a trusted proxy).
    var addressKey: PeerAddress.Key?
    /// Body bytes reserved in `AddressTable` for the current request (released when its response is written).
    var reservedBodyBytes = 0
    /// The last TLS read wanted the socket writable.
    private(set) var tlsWantsWrite = false

    init(fd: Int32, id: UInt64, tls: TLSSession?, machine: HTTPConnectionStateMachine) {
        self.fd = fd
        self.id = id
        self.tls = tls
        self.machine = machine
    }

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
