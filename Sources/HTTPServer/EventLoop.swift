import CLinux
import Clocks
import Glibc
import Locking
import Logging

/// A message from another thread to a loop, delivered through its mailbox and eventfd.
enum LoopMessage: Sendable {
    /// A handler finished; `id` guards against a new connection that reused the fd.
    case response(fd: Int32, id: UInt64, HTTPResponse)
    /// A response's body stream has bytes (or ended) after the loop found it empty.
    case streamReady(fd: Int32, id: UInt64)
    /// Stop accepting, close idle connections, give in-flight requests `grace` nanoseconds.
    case shutdown(grace: UInt64)
}

/// One event-loop thread: its own `SO_REUSEPORT` listener, a level-triggered epoll set, an eventfd for wake-ups,
/// and the connections it accepted.
///
/// Deadlines: each connection holds one absolute deadline for its current phase (set when the phase starts, never
/// pushed back by arriving bytes). The loop scans its connections on a 100 ms tick (`epoll_wait` timeout). A wheel
/// or heap would need an entry per deadline change — several per request at tens of thousands of requests per
/// second — while the scan costs O(connections) ten times a second (10k connections: ~100k comparisons/s) and
/// nothing per request.
final class EventLoop: @unchecked Sendable {
    // @unchecked: every stored property except `mailbox` is used only on the loop's own thread once `run()`
    // starts (init runs before the thread exists); `mailbox` is locked and is the only cross-thread entry point.

    struct Mailbox {
        var messages: [LoopMessage] = []
        var wakePending = false
        var closed = false
    }

    static let tickNanos: UInt64 = 100_000_000
    static let lingerNanos: UInt64 = 2_000_000_000
    static let readBufferSize = 64 * 1024

    let index: Int
    let context: ServerContext
    let epfd: Int32
    let wakeFD: Int32
    var listenFD: Int32
    var reserveFD: Int32
    let mailbox = Locked(Mailbox())
    var connections: [Connection?] = []
    var connectionCount = 0
    var nextConnectionID: UInt64 = 1
    var now: UInt64 = MonotonicClock.now()
    var lastScan: UInt64 = 0
    var acceptPausedUntil: UInt64 = 0
    var lastRefusalLog: UInt64 = 0
    var refusedSinceLog = 0
    var refusedPerAddressSinceLog = 0
    var evictedSinceLog = 0
    var draining = false
    var drainDeadline: UInt64 = 0
    let readBuffer: UnsafeMutableRawBufferPointer
    /// What this loop's connections share (router, limits, Date header, request IDs).
    let environment: ConnectionEnvironment
    let accessLog: AccessLog
    private let onExit: @Sendable () -> Void

    init(index: Int, listenFD: Int32, context: ServerContext, onExit: @escaping @Sendable () -> Void) throws {
        self.index = index
        self.context = context
        self.listenFD = listenFD
        self.onExit = onExit
        let epfd = try check("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        let wakeFD: Int32
        do {
            wakeFD = try check("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        } catch {
            close(epfd)
            throw error
        }
        self.epfd = epfd
        self.wakeFD = wakeFD
        // A spare descriptor: when accept fails with EMFILE we close it, accept and close the pending
        // connection (so the listener stops signalling), then take it back.
        self.reserveFD = open("/dev/null", O_RDONLY | O_CLOEXEC)
        self.readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: EventLoop.readBufferSize, alignment: 16)
        self.accessLog = AccessLog(logger: context.logger, observer: context.onRequestsCompleted)
        self.environment = ConnectionEnvironment(
            router: context.router, limits: context.limits, serverName: context.serverName,
            requestIDPrefix: EventLoop.randomHex(8) + String(index, radix: 16),
            readBufferSize: EventLoop.readBufferSize,
            lingerNanos: EventLoop.lingerNanos, tickNanos: EventLoop.tickNanos)
        do {
            try register(wakeFD, events: UInt32(EPOLLIN.rawValue))
            try register(listenFD, events: UInt32(EPOLLIN.rawValue))
        } catch {
            close(epfd)
            close(wakeFD)
            if reserveFD >= 0 { close(reserveFD) }
            readBuffer.deallocate()
            throw error
        }
    }

    func register(_ fd: Int32, events: UInt32) throws {
        var event = epoll_event(events: events, data: epoll_data_t(u64: UInt64(UInt32(bitPattern: fd))))
        try check("epoll_ctl(ADD)") { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &event) }
    }

    // MARK: Cross-thread entry point

    /// Queues a message and wakes the loop. Safe from any thread; dropped once the loop has exited.
    func post(_ message: LoopMessage) {
        mailbox.withLock { box in
            guard !box.closed else { return }
            box.messages.append(message)
            // One eventfd write per batch: later posts ride on the pending wake-up.
            if !box.wakePending {
                box.wakePending = true
                var one: UInt64 = 1
                _ = write(wakeFD, &one, 8)
            }
        }
    }

    // MARK: The loop

    func run() {
        let capacity: Int32 = 256
        var events = [epoll_event](repeating: epoll_event(), count: Int(capacity))
        while true {
            let needsTimer = connectionCount > 0 || acceptPausedUntil > 0 || draining
            var timeout: Int32 = needsTimer ? 100 : -1
            if accessLog.deadline != 0 {
                // Wake up in time to hand over the pending access-log lines (rounded up to whole milliseconds).
                let wait = Int32(clamping: (accessLog.deadline &- min(now, accessLog.deadline) + 999_999) / 1_000_000)
                timeout = timeout < 0 ? max(wait, 1) : min(timeout, max(wait, 1))
            }
            let n = events.withUnsafeMutableBufferPointer { epoll_wait(epfd, $0.baseAddress, capacity, timeout) }
            if n < 0 {
                if errno == EINTR { continue }
                context.logger.critical("epoll_wait failed", ["errno": "\(errno)", "loop": "\(index)"])
                break
            }
            now = MonotonicClock.now()
            for i in 0..<Int(n) {
                let flags = events[i].events
                let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: events[i].data.u64))
                if fd == wakeFD {
                    drainMailbox()
                } else if fd == listenFD {
                    acceptConnections()
                } else if fd >= 0 && Int(fd) < connections.count, let connection = connections[Int(fd)] {
                    handle(connection, flags: flags)
                }
            }
            if now &- lastScan >= EventLoop.tickNanos {
                lastScan = now
                expireDeadlines()
                if acceptPausedUntil > 0 && now >= acceptPausedUntil { resumeAccepting() }
            }
            accessLog.endOfIteration(now: now)
            if draining {
                if now >= drainDeadline {
                    for case let connection? in connections { closeConnection(connection) }
                }
                if connectionCount == 0 { break }
            }
        }
        finish()
    }

    /// Releases what a loop that never ran owns (a `start()` that failed half-way).
    func discardUnstarted() {
        if listenFD >= 0 { close(listenFD) }
        listenFD = -1
        mailbox.withLock { box in
            box.closed = true
            close(wakeFD)
        }
        close(epfd)
        if reserveFD >= 0 { close(reserveFD) }
        readBuffer.deallocate()
    }

    private func finish() {
        for case let connection? in connections { closeConnection(connection) }
        accessLog.flush()
        if listenFD >= 0 {
            close(listenFD)
            listenFD = -1
        }
        mailbox.withLock { box in
            box.closed = true
            box.messages.removeAll()
            close(wakeFD)
        }
        close(epfd)
        if reserveFD >= 0 { close(reserveFD) }
        readBuffer.deallocate()
        onExit()
    }

    private func drainMailbox() {
        var counter: UInt64 = 0
        _ = read(wakeFD, &counter, 8)
        let messages = mailbox.withLock { box -> [LoopMessage] in
            box.wakePending = false
            let taken = box.messages
            box.messages.removeAll(keepingCapacity: true)
            return taken
        }
        for message in messages {
            switch message {
            case .response(let fd, let id, let response):
                guard fd >= 0 && Int(fd) < connections.count, let connection = connections[Int(fd)],
                    connection.id == id
                else {
                    // The connection closed meanwhile (timeout, reset, shutdown): a streamed body's producer stops.
                    response.stream?.close()
                    continue
                }
                perform(connection, connection.machine.responded(response, now: now))
            case .streamReady(let fd, let id):
                guard fd >= 0 && Int(fd) < connections.count, let connection = connections[Int(fd)],
                    connection.id == id
                else { continue }
                perform(connection, connection.machine.streamReady(now: now))
            case .shutdown(let grace):
                beginDraining(grace: grace)
            }
        }
    }

    private func beginDraining(grace: UInt64) {
        guard !draining else { return }
        draining = true
        drainDeadline = now + grace
        if listenFD >= 0 {
            // Closing the descriptor removes it from the epoll set.
            close(listenFD)
            listenFD = -1
        }
        acceptPausedUntil = 0
        // Idle connections close; busy ones finish their current request, then close (`Connection: close`).
        for case let connection? in connections { perform(connection, connection.machine.beginDraining()) }
    }

    // MARK: Helpers

    func closeConnection(_ connection: Connection) {
        guard !connection.closed else { return }
        connection.closed = true
        // A producer blocked on a full stream must learn that nobody reads it any more.
        connection.machine.stream?.close()
        connection.machine.stream = nil
        _ = connection.machine.close()
        // close() also removes the descriptor from the epoll set.
        close(connection.fd)
        connections[Int(connection.fd)] = nil
        connectionCount -= 1
        context.openConnections.subtract(1, ordering: .relaxed)
        let key = connection.addressKey
        let reserved = connection.reservedBodyBytes
        connection.reservedBodyBytes = 0
        if key != nil || reserved > 0 {
            context.addresses.withLock { table in
                table.releaseBody(reserved, for: key)
                if let key { table.closed(key) }
            }
        }
    }

    /// Gives back the body bytes reserved for the request whose response was just written.
    func releaseBody(_ connection: Connection) {
        guard connection.reservedBodyBytes > 0 else { return }
        let reserved = connection.reservedBodyBytes
        connection.reservedBodyBytes = 0
        context.addresses.withLock { $0.releaseBody(reserved, for: connection.addressKey) }
    }

    /// Closes this loop's connection that has been idle (keep-alive, between requests) the longest, to make room
    /// for a new one at the connection cap. Returns false when this loop has none. O(connections), run only at the
    /// cap.
    func evictOldestIdle() -> Bool {
        var oldest: Connection?
        for case let connection? in connections where connection.machine.isIdleKeepAlive {
            if oldest.map({ connection.machine.idleSince < $0.machine.idleSince }) ?? true { oldest = connection }
        }
        guard let oldest else { return false }
        evictedSinceLog += 1
        perform(oldest, oldest.machine.close())
        return true
    }

    static func randomHex(_ bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        var out = ""
        for _ in 0..<bytes {
            let b = UInt8.random(in: 0...255, using: &generator)
            out += (b < 16 ? "0" : "") + String(b, radix: 16)
        }
        return out
    }
}
