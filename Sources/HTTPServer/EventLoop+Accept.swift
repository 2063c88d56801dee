import CLinux
import Glibc
import Logging

/// Accepting connections: the per-address and global connection limits, surviving descriptor exhaustion, and each
/// new connection's socket options, TLS session and state machine.
extension EventLoop {
    func acceptConnections() {
        // Bounded per wake-up so one busy listener cannot starve established connections; level-triggered
        // epoll reports the rest on the next round.
        for _ in 0..<64 {
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    clinux_accept_nonblock(listenFD, $0, &length)
                }
            }
            if fd < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED, EPROTO: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    survive(errno)
                    return
                default:
                    context.logger.error("accept failed", ["errno": "\(errno)", "loop": "\(index)"])
                    return
                }
            }
            if draining {
                close(fd)
                continue
            }
            let peer = Listener.peerAddress(address)
            // A trusted proxy carries many clients: it is not counted per address.
            let key = peer.flatMap { context.exemptAddresses.contains($0) ? nil : $0.key }
            if let key, !context.addresses.withLock({ $0.open(key) }) {
                close(fd)
                refusedPerAddressSinceLog += 1
                logRefusals()
                continue
            }
            // At the cap, the loop's oldest idle keep-alive connection makes room; only without one is the new
            // connection refused (so idle connections cannot keep everyone else out).
            let open = context.openConnections.load(ordering: .relaxed)
            if open >= context.limits.maxConnections && !evictOldestIdle() {
                close(fd)
                if let key { context.addresses.withLock { $0.closed(key) } }
                refusedSinceLog += 1
                logRefusals()
                continue
            }
            let described = Listener.describe(address)
            setUp(fd, peer: described.text, address: described.address, key: key)
        }
        if evictedSinceLog > 0 { logRefusals() }
    }

    /// At most one line per second: a connection flood must not become a log flood.
    private func logRefusals() {
        guard now &- lastRefusalLog >= 1_000_000_000 else { return }
        context.logger.warning(
            "Connections refused or evicted at a connection limit",
            [
                "open": "\(context.openConnections.load(ordering: .relaxed))", "refused_global": "\(refusedSinceLog)",
                "refused_per_address": "\(refusedPerAddressSinceLog)", "evicted_idle": "\(evictedSinceLog)",
                "loop": "\(index)",
            ])
        lastRefusalLog = now
        refusedSinceLog = 0
        refusedPerAddressSinceLog = 0
        evictedSinceLog = 0
    }

    /// Out of descriptors: shed the pending connection with the reserve descriptor, then stop accepting for one
    /// tick so the loop does not spin while the process stays at its limit.
    private func survive(_ code: Int32) {
        context.logger.warning("accept failed: out of file descriptors", ["errno": "\(code)", "loop": "\(index)"])
        if reserveFD >= 0 {
            close(reserveFD)
            reserveFD = -1
            let fd = clinux_accept_nonblock(listenFD, nil, nil)
            if fd >= 0 { close(fd) }
            reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        }
        if listenFD >= 0 && acceptPausedUntil == 0 {
            var event = epoll_event()
            epoll_ctl(epfd, EPOLL_CTL_DEL, listenFD, &event)
        }
        acceptPausedUntil = now + EventLoop.tickNanos
    }

    func resumeAccepting() {
        acceptPausedUntil = 0
        if reserveFD < 0 { reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC) }
        guard listenFD >= 0 else { return }
        do {
            try register(listenFD, events: UInt32(EPOLLIN.rawValue))
        } catch {
            context.logger.error("Could not resume accepting", ["error": "\(error)", "loop": "\(index)"])
        }
    }

    /// `key`: what `AddressTable` counted the connection under (nil: exempt); given back when it closes.
    private func setUp(_ fd: Int32, peer: String, address: String, key: PeerAddress.Key?) {
        var one: Int32 = 1
        // Responses are written in one send; without TCP_NODELAY Nagle would hold back small ones.
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var session: TLSSession?
        if let tls = context.tls {
            guard let s = TLSSession(context: tls, fd: fd) else {
                close(fd)
                if let key { context.addresses.withLock { $0.closed(key) } }
                context.logger.error("SSL_new failed", ["loop": "\(index)"])
                return
            }
            session = s
        }
        let machine = HTTPConnectionStateMachine(
            env: environment, peer: peer, address: address,
            isTLS: session != nil, now: now)
        let connection = Connection(fd: fd, id: nextConnectionID, tls: session, machine: machine)
        connection.addressKey = key
        nextConnectionID += 1
        let events = UInt32(EPOLLIN.rawValue)
        var event = epoll_event(events: events, data: epoll_data_t(u64: UInt64(UInt32(bitPattern: fd))))
        if epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) != 0 {
            context.logger.error("epoll_ctl(ADD) failed", ["errno": "\(errno)", "loop": "\(index)"])
            close(fd)
            if let key { context.addresses.withLock { $0.closed(key) } }
            return
        }
        connection.registeredEvents = events
        if Int(fd) >= connections.count {
            connections.append(contentsOf: repeatElement(nil, count: Int(fd) + 1 - connections.count))
        }
        connections[Int(fd)] = connection
        connectionCount += 1
        context.openConnections.add(1, ordering: .relaxed)
        context.acceptedConnections.add(1, ordering: .relaxed)
    }
}
