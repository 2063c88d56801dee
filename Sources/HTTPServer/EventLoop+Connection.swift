import CLinux
import Clocks
import Glibc
import Logging

/// Performing a connection's state-machine actions: the system calls (read, write, shutdown, close, epoll
/// interest), TLS, handlers and the access log. Every protocol decision is `HTTPConnectionStateMachine`'s.
extension EventLoop {
    typealias Action = HTTPConnectionStateMachine.Action

    /// The priority of request handlers' tasks (`run`): above the publish engine's default, so requests get
    /// worker threads of their own.
    static let requestPriority = TaskPriority.high

    /// An epoll event for `connection`.
    func handle(_ connection: Connection, flags: UInt32) {
        let input = flags & UInt32(EPOLLIN.rawValue) != 0
        let errorFlags = UInt32(EPOLLERR.rawValue) | UInt32(EPOLLHUP.rawValue)
        if flags & errorFlags != 0 && !input {
            perform(connection, connection.machine.failed())
            return
        }
        if connection.machine.phase == .handshaking {
            driveHandshake(connection)
            return
        }
        if input { connection.machine.readable() }
        // TLS: a write that waited may go on after any event (OpenSSL may have needed to read first).
        if flags & UInt32(EPOLLOUT.rawValue) != 0 || connection.tls != nil { connection.machine.writable() }
        perform(connection, connection.machine.proceed(now: now))
    }

    /// Performs `first` and every action that follows from it, until the connection waits or is closed. A loop,
    /// not recursion: a long pipeline of requests answered on the loop cannot grow the stack.
    func perform(_ connection: Connection, _ first: Action) {
        var action = first
        while true {
            switch action {
            case .wait:
                updateInterest(connection)
                return
            case .close:
                closeConnection(connection)
                return
            case .read:
                action = readAvailable(connection)
            case .write:
                action = flush(connection)
            case .admit:
                action = admit(connection)
            case .runHandler:
                guard let (request, route) = connection.machine.takeHandlerCall() else {
                    // Not reachable: the machine sets the call together with the action. Closing beats trapping.
                    action = connection.machine.failed()
                    continue
                }
                action = run(route, request, on: connection)
            case .pullStream:
                guard let stream = connection.machine.stream else {
                    action = connection.machine.proceed(now: now)
                    continue
                }
                let (fd, id) = (connection.fd, connection.id)
                action = connection.machine.streamTaken(
                    stream.take(wake: { [self] in
                        self.post(.streamReady(fd: fd, id: id))
                    }), now: now)
            case .requestCompleted:
                releaseBody(connection)
                logAccess(connection)
                action = connection.machine.proceed(now: now)
            case .shutdownOutput:
                connection.tls?.shutdown()
                shutdown(connection.fd, Int32(SHUT_WR))
                action = connection.machine.outputShutDown(now: now)
            }
        }
    }

    private func driveHandshake(_ connection: Connection) {
        guard let tls = connection.tls else { return }
        switch tls.handshake() {
        case .bytes:
            perform(connection, connection.machine.handshakeCompleted(now: now))
        case .wantRead:
            connection.machine.handshakeWaits(wantsWrite: false)
            updateInterest(connection)
        case .wantWrite:
            connection.machine.handshakeWaits(wantsWrite: true)
            updateInterest(connection)
        case .closed, .failed:
            context.logger.debug("TLS handshake failed", ["peer": connection.machine.peer])
            perform(connection, connection.machine.failed())
        }
    }

    /// Reads what the socket has into the state machine until it would block or the machine has enough.
    private func readAvailable(_ connection: Connection) -> Action {
        while true {
            switch connection.receive(readBuffer) {
            case .bytes(let n):
                let more = connection.machine.received(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]), now: now)
                // Plain sockets: a short read means the kernel buffer is empty; skip the EAGAIN round trip.
                // TLS must drain to WANT_READ because decrypted bytes may sit inside OpenSSL, invisible to epoll.
                if !more || (connection.tls == nil && n < readBuffer.count) {
                    return connection.machine.readStopped(now: now)
                }
            case .wouldBlock:
                return connection.machine.readStopped(tlsWantsWrite: connection.tlsWantsWrite, now: now)
            case .eof:
                return connection.machine.readEOF(now: now)
            case .failed:
                return connection.machine.failed()
            }
        }
    }

    /// Writes as much pending output as the socket takes.
    private func flush(_ connection: Connection) -> Action {
        let result = connection.machine.pendingOutput.withUnsafeBytes { connection.send($0) }
        switch result {
        case .bytes(let n): return connection.machine.wrote(n, now: now)
        case .wouldBlock: return connection.machine.writeWouldBlock()
        case .eof, .failed: return connection.machine.failed()
        }
    }

    /// A request head arrived: the route's admission check (address and instance rate limits), then the body's
    /// reservation in the server-wide budget, both before any body byte is read or `100 Continue` sent.
    private func admit(_ connection: Connection) -> Action {
        guard let (request, route, bodyBytes) = connection.machine.takeAdmissionCall() else {
            return connection.machine.failed()  // not reachable: the machine sets the call with the action
        }
        if let admission = route.admission {
            do {
                try admission(request)
            } catch let error as any HTTPResponseError {
                return connection.machine.refused(route.finish(request, HTTPResponse(error: error)), now: now)
            } catch {
                context.logger.error(
                    "Admission check failed",
                    [
                        "error": "\(error)", "route": request.routePattern,
                        "request_id": request.requestID,
                    ])
                return connection.machine.refused(
                    route.finish(request, HTTPResponse(error: HTTPError.internalError)),
                    now: now)
            }
        }
        if bodyBytes > 0 {
            let decision = context.addresses.withLock { $0.reserveBody(bodyBytes, for: connection.addressKey) }
            guard decision == .reserved else {
                context.logger.debug(
                    "Request body refused: body budget spent",
                    ["peer": connection.machine.peer, "bytes": "\(bodyBytes)", "scope": "\(decision)"])
                return connection.machine.refused(
                    route.finish(request, HTTPResponse(error: BodyBudgetError())),
                    now: now)
            }
            connection.reservedBodyBytes = bodyBytes
        }
        return connection.machine.admitted(now: now)
    }

    /// Runs the handler (the request was admitted when its head arrived): on the loop for `onEventLoop` routes,
    /// else as a task whose response comes back through the mailbox.
    ///
    /// The task runs at `requestPriority`, above the publish engine's tasks (default priority): on Linux each task
    /// priority has its own Dispatch worker threads, one per core, and a job keeps its thread until it suspends, so
    /// at the engine's priority a one-row registration waited for a free thread behind another instance's pumps and
    /// result batches (`bench/noisy/run.sh`, docs/BENCHMARKS.md "Noisy neighbour"). Dispatch runs the high
    /// priority's threads at nice -2 where the process may (root, `CAP_SYS_NICE`), else at 0 like the default
    /// ones: the kernel still shares the cores between both sets, a request only no longer queues behind jobs.
    private func run(_ route: Router.Route, _ request: HTTPRequest, on connection: Connection) -> Action {
        switch route.handler {
        case .onEventLoop(let handler):
            let response: HTTPResponse
            do {
                response = try handler(request)
            } catch {
                response = context.response(for: error, from: request)
            }
            return connection.machine.responded(route.finish(request, response), now: now)
        case .task(let handler):
            let fd = connection.fd
            let id = connection.id
            let context = self.context
            Task(priority: Self.requestPriority) { [self] in
                let response: HTTPResponse
                do {
                    response = try await handler(request)
                } catch {
                    response = context.response(for: error, from: request)
                }
                self.post(.response(fd: fd, id: id, route.finish(request, response)))
            }
            return .wait
        }
    }

    /// Closes connections whose phase deadline passed (reading ones get a 408 first).
    func expireDeadlines() {
        // Near the connection cap, idle keep-alive connections get the short idle timeout.
        let open = context.openConnections.load(ordering: .relaxed)
        let pressured = open * 4 >= context.limits.maxConnections * 3
        let shortIdle = context.limits.idleTimeoutUnderPressure.nanoseconds
        for case let connection? in connections {
            if pressured && connection.machine.idleKeepAliveExpired(now: now, after: shortIdle) {
                perform(connection, connection.machine.close())
                continue
            }
            let deadline = connection.machine.deadline
            guard deadline != 0 && now >= deadline else { continue }
            if connection.machine.phase == .readingHead || connection.machine.phase == .readingBody {
                context.logger.debug("Request timed out", ["peer": connection.machine.peer])
            }
            perform(connection, connection.machine.timerFired(now: now))
        }
    }

    func updateInterest(_ connection: Connection) {
        guard !connection.closed else { return }
        var events: UInt32 = 0
        if connection.machine.wantsReadEvents { events |= UInt32(EPOLLIN.rawValue) }
        if connection.machine.wantsWriteEvents { events |= UInt32(EPOLLOUT.rawValue) }
        guard events != connection.registeredEvents else { return }
        var event = epoll_event(events: events, data: epoll_data_t(u64: UInt64(UInt32(bitPattern: connection.fd))))
        if epoll_ctl(epfd, EPOLL_CTL_MOD, connection.fd, &event) == 0 {
            connection.registeredEvents = events
        } else {
            closeConnection(connection)
        }
    }

    private func logAccess(_ connection: Connection) {
        context.completedRequests.add(1, ordering: .relaxed)
        let completed = connection.machine.completed
        if let rejection = completed.rejection, context.logger.isEnabled(.debug) {
            context.logger.debug(
                "Rejected request",
                [
                    "status": "\(rejection.status.code)", "reason": rejection.reason,
                    "peer": connection.machine.peer,
                ])
        }
        guard accessLog.wantsRecords else { return }
        let record = AccessLogRecord(
            method: completed.method?.rawValue ?? "-", route: completed.route, status: completed.status,
            bytesIn: completed.bytesIn, bytesOut: completed.bytesOut,
            duration: .nanoseconds(Int64(clamping: completed.end &- completed.start)), requestID: completed.requestID,
            peer: connection.machine.peer, isTLS: connection.tls != nil)
        accessLog.append(record, now: now)
    }
}
