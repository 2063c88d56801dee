import CLinux
import Clocks
import Glibc
import Logging

/// Per-connection driving: read → parse → route → handler task → write → keep-alive or close.
extension EventLoop {
    func handle(_ connection: Connection, flags: UInt32) {
        let errorFlags = UInt32(EPOLLERR.rawValue) | UInt32(EPOLLHUP.rawValue)
        if flags & errorFlags != 0 && flags & UInt32(EPOLLIN.rawValue) == 0 {
            closeConnection(connection)
            return
        }
        if connection.phase == .handshaking {
            driveHandshake(connection)
            return
        }
        if connection.outputPending && (flags & UInt32(EPOLLOUT.rawValue) != 0 || connection.tls != nil) {
            flush(connection)
            if connection.closed { return }
        }
        let writable = flags & UInt32(EPOLLOUT.rawValue) != 0
        if flags & UInt32(EPOLLIN.rawValue) != 0 || (connection.tlsWantsWrite && writable) {
            readAvailable(connection)
            if connection.closed { return }
        }
        process(connection)
    }

    private func driveHandshake(_ connection: Connection) {
        guard let tls = connection.tls else { return }
        switch tls.handshake() {
        case .bytes:
            connection.tlsWantsWrite = false
            connection.phase = .idle
            connection.deadline = now + context.limits.headerReadTimeout.nanoseconds
            updateInterest(connection)
            readAvailable(connection)
            if !connection.closed { process(connection) }
        case .wantRead:
            connection.tlsWantsWrite = false
            updateInterest(connection)
        case .wantWrite:
            connection.tlsWantsWrite = true
            updateInterest(connection)
        case .closed, .failed:
            context.logger.debug("TLS handshake failed", ["peer": connection.peer])
            closeConnection(connection)
        }
    }

    /// Reads what the socket has into the parser (or discards it while lingering).
    func readAvailable(_ connection: Connection) {
        var discarded = 0
        while !connection.readEOF && !connection.readPaused {
            switch connection.receive(readBuffer) {
            case .bytes(let n):
                if connection.phase == .lingering {
                    // Bounded per wake-up so a client still uploading cannot monopolise the loop; the linger
                    // deadline bounds the total.
                    discarded += n
                    if discarded >= 16 * readBuffer.count { return }
                    continue
                }
                connection.parser.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
                if connection.phase == .idle {
                    connection.phase = .readingHead
                    // The first request's clock started at accept (or handshake); later ones at their first byte.
                    if connection.requestCount > 0 || connection.deadline == 0 {
                        connection.deadline = now + context.limits.headerReadTimeout.nanoseconds
                    }
                    connection.requestStart = now
                }
                let busy = connection.phase == .handling || connection.phase == .writing
                if busy && connection.parser.bufferedBytes > maxBufferedWhileBusy {
                    // A client pipelining faster than we answer: stop reading until this response is out.
                    connection.readPaused = true
                    updateInterest(connection)
                    return
                }
                // Plain sockets: a short read means the kernel buffer is empty; skip the EAGAIN round trip.
                // TLS must drain to WANT_READ because decrypted bytes may sit inside OpenSSL, invisible to epoll.
                if connection.tls == nil && n < readBuffer.count { return }
            case .wouldBlock:
                updateInterest(connection)
                return
            case .eof:
                connection.readEOF = true
                if connection.phase == .lingering {
                    closeConnection(connection)
                } else {
                    updateInterest(connection)
                }
                return
            case .failed:
                closeConnection(connection)
                return
            }
        }
    }

    /// Parses buffered bytes and acts on them. Re-entrant calls (a response finished while parsing) are turned
    /// into another round of the outer loop instead of recursion, so long pipelines cannot grow the stack.
    func process(_ connection: Connection) {
        if connection.inProcess {
            connection.reprocess = true
            return
        }
        connection.inProcess = true
        repeat {
            connection.reprocess = false
            processOnce(connection)
        } while connection.reprocess && !connection.closed
        connection.inProcess = false
    }

    private func processOnce(_ connection: Connection) {
        while !connection.closed {
            switch connection.phase {
            case .idle, .readingHead, .readingBody: break
            case .handshaking, .handling, .writing, .lingering: return
            }
            if connection.phase == .idle && !connection.parser.isIdle {
                // Pipelined bytes were already buffered: the next request starts now.
                connection.phase = .readingHead
                connection.deadline = now + context.limits.headerReadTimeout.nanoseconds
                connection.requestStart = now
            }
            switch connection.parser.next() {
            case .needMoreData:
                if connection.readEOF {
                    // The client finished sending: between requests that is a normal close; mid-request there
                    // is nobody left to read an answer about the truncated request.
                    closeConnection(connection)
                }
                return
            case .head(let head):
                startRequest(connection, head)
            case .body(let body, let trailers):
                dispatch(connection, body: body, trailers: trailers)
                return
            case .error(let error):
                respondToParseError(connection, error)
                return
            }
        }
    }

    private func startRequest(_ connection: Connection, _ head: RequestHead) {
        connection.head = head
        connection.routePattern = "-"
        connection.match = nil
        if let incoming = head.headers.first("x-request-id"), EventLoop.isSaneRequestID(incoming) {
            connection.requestID = incoming
        } else {
            connection.requestID = nextRequestID()
        }
        let (path, _) = PercentDecoding.split(target: head.target)
        guard let segments = PercentDecoding.segments(path: path) else {
            respondToParseError(connection, .bad("Invalid percent-encoding in path"))
            return
        }
        let match = context.router.match(head.method, segments)
        connection.match = match
        let limit: Int
        switch match {
        case .found(let route, _):
            connection.routePattern = route.pattern
            limit = route.bodyLimit?.maxBytes ?? context.limits.maxBodyBytes
        case .notFound, .methodNotAllowed:
            if head.framing != .none && head.framing != .contentLength(0) {
                // Nobody wants this body: answer now (no 100 Continue) and close rather than read it.
                connection.phase = .handling
                sendResponse(connection, defaultResponse(for: match), keepAlive: false)
                return
            }
            limit = 0
        }
        switch connection.parser.beginBody(limit: limit) {
        case .tooLarge:
            respondToParseError(connection, .bodyTooLarge)
        case .read:
            connection.phase = .readingBody
            connection.deadline = now + context.limits.bodyReadTimeout.nanoseconds
            if head.expectsContinue {
                // RFC 9110 §10.1.1: the route exists and the declared length fits, so ask for the body.
                connection.out.append(contentsOf: "HTTP/1.1 100 Continue\r\n\r\n".utf8)
                flush(connection)
            }
        case .noBody:
            connection.phase = .readingBody
        }
    }

    private func dispatch(_ connection: Connection, body: [UInt8], trailers: HTTPHeaders) {
        guard let head = connection.head, let match = connection.match else { return }
        connection.phase = .handling
        connection.deadline = 0
        guard case .found(let route, let parameters) = match else {
            sendResponse(connection, defaultResponse(for: match))
            return
        }
        let (path, rawQuery) = PercentDecoding.split(target: head.target)
        guard let query = rawQuery.map(PercentDecoding.queryItems) ?? [] else {
            respondToParseError(connection, .bad("Invalid percent-encoding in query"))
            return
        }
        let request = HTTPRequest(
            method: head.method, rawTarget: head.target, path: String(path), parameters: parameters, query: query,
            headers: head.headers, trailers: trailers, body: body, peer: connection.peer,
            clientAddress: connection.address, routePattern: route.pattern, requestID: connection.requestID, isTLS: connection.tls != nil,
            minorVersion: head.minorVersion)
        let handler = route.handler
        if let admission = route.admission {
            do {
                try admission(request)
            } catch let error as any HTTPResponseError {
                sendResponse(connection, HTTPResponse(error: error))
                return
            } catch {
                context.logger.error("Admission check failed", ["error": "\(error)", "route": request.routePattern,
                                                                "request_id": request.requestID])
                sendResponse(connection, HTTPResponse(error: HTTPError.internalError))
                return
            }
        }
        let fd = connection.fd
        let id = connection.id
        let logger = context.logger
        let errorResponse = context.errorResponse
        Task { [self] in
            let response: HTTPResponse
            do {
                response = try await handler(request)
            } catch let error as any HTTPResponseError {
                response = HTTPResponse(error: error)
            } catch {
                if let mapped = errorResponse?(error) {
                    response = mapped
                } else {
                    // Details stay in the log; the client only learns that something went wrong.
                    logger.error("Handler failed", ["error": "\(error)", "route": request.routePattern,
                                                    "request_id": request.requestID])
                    response = HTTPResponse(error: HTTPError.internalError)
                }
            }
            self.post(.response(fd: fd, id: id, response))
        }
    }

    private func defaultResponse(for match: Router.Match) -> HTTPResponse {
        switch match {
        case .methodNotAllowed(let allow):
            var response = HTTPResponse(error: HTTPError(.methodNotAllowed, detail: "Method not allowed"))
            response.headers.add("Allow", allow.joined(separator: ", "))
            return response
        default:
            return HTTPResponse(error: HTTPError(.notFound, detail: "Not found"))
        }
    }

    /// Every parse error closes the connection after the response.
    func respondToParseError(_ connection: Connection, _ error: HTTPParseError) {
        let response: HTTPResponse
        if error.isBodyTooLarge, case .found(let route, _)? = connection.match, let custom = route.bodyLimit?.error {
            response = HTTPResponse(error: custom)
        } else {
            response = HTTPResponse(error: HTTPError(error.status, detail: error.reason))
        }
        context.logger.debug("Rejected request", ["status": "\(error.status.code)", "reason": error.reason,
                                                  "peer": connection.peer])
        if connection.requestStart == 0 { connection.requestStart = now }
        if connection.requestID.isEmpty { connection.requestID = nextRequestID() }
        connection.phase = .handling
        sendResponse(connection, response, keepAlive: false)
    }

    /// Serializes and starts writing `response` for the current request.
    func sendResponse(_ connection: Connection, _ response: HTTPResponse, keepAlive requested: Bool = true) {
        let head = connection.head
        var keepAlive = requested && (head?.keepAlive ?? false) && !draining && !connection.closeAfterWrite
            && !connection.readEOF
        if let max = context.limits.maxRequestsPerConnection, connection.requestCount + 1 >= max { keepAlive = false }
        connection.closeAfterWrite = !keepAlive
        let before = connection.out.count - connection.outOffset
        ResponseSerializer.serialize(
            response, into: &connection.out, date: dateCache.current(), omitBody: head?.method == .head,
            keepAlive: keepAlive, minorVersion: head?.minorVersion ?? 1, requestID: connection.requestID,
            serverName: context.serverName)
        connection.responseStatus = response.status.code
        connection.responseBytes = connection.out.count - connection.outOffset - before
        connection.phase = .writing
        connection.deadline = now + context.limits.writeTimeout.nanoseconds
        flush(connection)
    }

    /// Writes as much pending output as the socket takes; completes the response when all is written.
    func flush(_ connection: Connection) {
        while connection.outputPending {
            let result = connection.out.withUnsafeBytes { bytes in
                connection.send(UnsafeRawBufferPointer(rebasing: bytes[connection.outOffset...]))
            }
            switch result {
            case .bytes(let n):
                connection.outOffset += n
            case .wouldBlock:
                updateInterest(connection)
                return
            case .eof, .failed:
                closeConnection(connection)
                return
            }
        }
        if connection.out.capacity > 256 * 1024 {
            connection.out = []
        } else {
            connection.out.removeAll(keepingCapacity: true)
        }
        connection.outOffset = 0
        updateInterest(connection)
        if connection.phase == .writing { responseWritten(connection) }
    }

    private func responseWritten(_ connection: Connection) {
        connection.requestCount += 1
        logAccess(connection)
        connection.head = nil
        connection.match = nil
        connection.requestID = ""
        connection.requestStart = 0
        if connection.closeAfterWrite {
            beginLingeringClose(connection)
            return
        }
        connection.phase = .idle
        connection.deadline = now + context.limits.idleTimeout.nanoseconds
        if connection.readPaused {
            connection.readPaused = false
            updateInterest(connection)
            if connection.tls == nil { readAvailable(connection) }
        }
        if connection.tls != nil && !connection.closed { readAvailable(connection) }
        if !connection.closed { process(connection) }
    }

    /// Half-closes our side and discards input until the client closes, so it reads the final response instead
    /// of a TCP reset caused by unread bytes (RFC 9112 §9.6).
    private func beginLingeringClose(_ connection: Connection) {
        if connection.readEOF {
            connection.tls?.shutdown()
            closeConnection(connection)
            return
        }
        connection.tls?.shutdown()
        shutdown(connection.fd, Int32(SHUT_WR))
        connection.phase = .lingering
        connection.deadline = now + EventLoop.lingerNanos
        connection.readPaused = false
        updateInterest(connection)
        if draining {
            // Shutting down: discard what already arrived and close now. With an empty receive queue close()
            // sends a FIN, not a reset, so the response just written still reaches the client.
            readAvailable(connection)
            closeConnection(connection)
        }
    }

    /// Closes connections whose phase deadline passed. Reading ones get a 408 first.
    func expireDeadlines() {
        for case let connection? in connections where connection.deadline != 0 && now >= connection.deadline {
            switch connection.phase {
            case .readingHead, .readingBody:
                context.logger.debug("Request timed out", ["peer": connection.peer])
                respondToParseError(connection, HTTPParseError(.requestTimeout, "Request timed out"))
                // Do not linger after a timeout: the client already had its chance.
                if !connection.closed && connection.phase == .lingering {
                    connection.deadline = now + EventLoop.tickNanos
                }
            case .handshaking, .idle, .writing, .lingering:
                closeConnection(connection)
            case .handling:
                break
            }
        }
    }

    private func logAccess(_ connection: Connection) {
        let bytesIn = connection.parser.consumedBytes - connection.consumedAtStart
        connection.consumedAtStart = connection.parser.consumedBytes
        context.completedRequests.add(1, ordering: .relaxed)
        let logger = context.logger
        let observer = context.onRequestCompleted
        guard logger.isEnabled(.info) || observer != nil else { return }
        let record = AccessLogRecord(
            method: connection.head?.method.rawValue ?? "-", route: connection.routePattern,
            status: connection.responseStatus, bytesIn: bytesIn, bytesOut: connection.responseBytes,
            duration: .nanoseconds(Int64(now &- (connection.requestStart == 0 ? now : connection.requestStart))),
            requestID: connection.requestID, peer: connection.peer, isTLS: connection.tls != nil)
        if logger.isEnabled(.info) {
            let micros = record.duration.nanoseconds / 1000
            logger.info("Request completed", [
                "method": record.method, "route": record.route, "status": String(record.status),
                "bytes_in": String(record.bytesIn), "bytes_out": String(record.bytesOut),
                "duration_ms": String(Double(micros) / 1000), "request_id": record.requestID, "peer": record.peer,
            ])
        }
        observer?(record)
    }

    /// Accept a client's `X-Request-ID` only when it cannot pollute logs: 1–128 characters of
    /// `[A-Za-z0-9._:-]`.
    static func isSaneRequestID(_ id: String) -> Bool {
        let bytes = id.utf8
        guard !bytes.isEmpty, bytes.count <= 128 else { return false }
        return bytes.allSatisfy { c in
            (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 45 || c == 46 || c == 95
                || c == 58
        }
    }
}
