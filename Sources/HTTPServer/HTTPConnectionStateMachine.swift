// Over 300 lines on purpose: every connection-level transition (socket events, timers, drain, completion) is in
// this one file so the phase rules can be checked in one place; the per-request half is in
// HTTPConnectionStateMachine+Request.swift.

/// The HTTP/1.1 rules of one server connection as a pure state machine: it takes events (bytes read, the socket
/// would block, a handler answered, bytes written, a timer fired, the peer closed, a shutdown began) and answers
/// with the next `Action` for the event loop to perform. It owns the request parser, keep-alive, one request at a
/// time (pipelined requests wait in the parser's buffer and are answered in order), the phase deadlines, the
/// buffering bound, `100 Continue`, `Connection: close` and the error responses. It makes no system calls and
/// reads no clock (`now` comes with every event), so `HTTPConnectionStateMachineTests` drive it without sockets.
///
/// Protocol for the loop: perform the returned action, report its outcome with the matching event, and go on
/// with the action that returns, until `.wait` (wait for epoll, a handler or the timer) or `.close`:
/// - `.read`: read until the socket would block, feeding `received(_:now:)` while it returns true, then report
///   `readStopped(tlsWantsWrite:now:)`, `readEOF(now:)` or `failed()`.
/// - `.write`: send `pendingOutput`, reporting `wrote(_:now:)` per send, or `writeWouldBlock()` / `failed()`.
/// - `.admit`: a request head arrived; take it with `takeAdmissionCall()`, run the route's admission check and
///   reserve its body bytes, then report `admitted(now:)` or `refused(_:now:)`. Before the body is read and before
///   `100 Continue` is sent, so a refused request costs neither.
/// - `.runHandler`: take the request with `takeHandlerCall()`, run the handler, then report
///   `responded(_:now:)` (possibly much later, from a task; a response for a request the connection no longer
///   waits for is ignored).
/// - `.requestCompleted`: write the access log line for `completed`, then `proceed(now:)`.
/// Actions carry no payload (the machine holds it until the loop reads it): an action is a byte, returned through
/// every step of the loop, where a payload enum was copied and destroyed with value witnesses at each step.
/// - `.shutdownOutput`: TLS close_notify and `shutdown(SHUT_WR)`, then `outputShutDown(now:)`.
/// Epoll interest follows `wantsReadEvents` / `wantsWriteEvents`; socket readiness is reported with
/// `readable()` / `writable()`.
struct HTTPConnectionStateMachine {
    enum Phase: Equatable {
        /// TLS handshake in progress (driven by the loop, reported with `handshake…` events).
        case handshaking
        /// Between requests (or before the first one); no request byte buffered.
        case idle
        case readingHead
        /// The head is in and the loop runs the admission check (`.admit`); nothing is read or parsed meanwhile.
        case admitting
        case readingBody
        /// The handler runs; reads continue into the parser's buffer (bounded) but nothing is parsed.
        case handling
        /// A response is being written.
        case writing
        /// After a `Connection: close` response: our side is shut down and input is discarded until EOF or the
        /// linger deadline, so the client reads the response instead of a reset.
        case lingering
        case closed
    }

    /// What the event loop does next.
    enum Action {
        /// Nothing until the next socket event, handler response or timer.
        case wait
        case read
        case write
        /// Run the route's admission check and reserve the body for the request `takeAdmissionCall()` returns.
        case admit
        /// Run the route's handler for the request `takeHandlerCall()` returns.
        case runHandler
        /// A response was fully written: log `completed` and count it.
        case requestCompleted
        /// Take what the response's body stream (`stream`) holds and report it with `streamTaken(_:now:)`.
        case pullStream
        /// Half-close before a lingering close.
        case shutdownOutput
        case close
    }

    // The plain `var` fields are set by the request half in HTTPConnectionStateMachine+Request.swift only;
    // everything else reads them.
    let env: ConnectionEnvironment
    let peer: String
    /// The peer's IP address without the port (what per-client limits key on).
    let address: String
    let isTLS: Bool

    var phase: Phase
    /// Monotonic ns at which the current phase times out; 0 means none. Set when a phase starts, never pushed
    /// back by arriving bytes (trickling cannot extend it).
    var deadline: UInt64
    var parser: RequestParser
    /// Response bytes not yet written start at `outputOffset`.
    var output: [UInt8] = []
    var outputOffset = 0
    private(set) var readEOF = false
    /// Reading stopped because the client sent more than `maxBufferedWhileBusy` while we were busy.
    private(set) var readPaused = false
    /// The last read would block: wait for epoll before reading again.
    private(set) var readBlocked = true
    private(set) var writeBlocked = false
    /// OpenSSL needs the socket writable to go on reading (renegotiation, key update).
    private(set) var tlsWantsWrite = false
    private(set) var requestCount = 0
    /// The current response ends the connection.
    var closeAfterWrite = false
    /// The current response's body stream while it is being sent; the loop closes it when the connection closes.
    var stream: HTTPBodyStream?
    /// Whether `stream`'s bytes go in chunks (HTTP/1.1) or raw until the close (HTTP/1.0).
    var streamChunked = true
    /// The stream had nothing: wait for `streamReady` before pulling again.
    private var awaitingStream = false
    private(set) var draining = false
    private var shutdownPending = false
    /// Lingering after a timeout lasts one tick, not `lingerNanos`: the client already had its chance.
    private var lingerBriefly = false
    /// Shutting down: after our final response, discard what already arrived and close.
    private var closeWhenDrained = false
    private var discardedThisWakeUp = 0
    /// Reading stopped with bytes possibly left (in the socket or, with TLS, inside OpenSSL where epoll cannot see
    /// them) so that the head is parsed first: reading goes on once it is (`parseStep`).
    private var readStoppedForHead = false
    /// `completed` holds a request not yet reported with `.requestCompleted`.
    private var completionPending = false
    /// The request of the latest `.requestCompleted`.
    private(set) var completed = CompletedRequest()
    /// The request and route of a `.runHandler` not yet taken (set by the request half).
    var handlerCall: (request: HTTPRequest, route: Router.Route)?
    /// The request (without its body) of an `.admit` not yet taken, and the body bytes to reserve.
    var admissionCall: (request: HTTPRequest, route: Router.Route, bodyBytes: Int)?
    /// Monotonic ns when the connection last became idle after a response (0: never); what eviction orders by.
    private(set) var idleSince: UInt64 = 0

    // The current request.
    var request = RequestState()

    struct RequestState {
        var head: RequestHead?
        /// `head.target` split into path and query once (`PercentDecoding.split`), for routing and the handler.
        var path: Substring = ""
        var query: Substring?
        var match: Router.Match?
        var routePattern = "-"
        var requestID = ""
        var start: UInt64 = 0
        var status = 0
        var bytesOut = 0
        var rejection: HTTPParseError?
        /// The request as the handler will see it, built when the head arrived (the body is added at dispatch).
        var built: HTTPRequest?
        /// The request was refused at admission but its small body is read (and dropped) to keep the connection.
        var refusal: HTTPResponse?
        var expectsContinue = false
    }

    init(env: ConnectionEnvironment, peer: String, address: String, isTLS: Bool, now: UInt64) {
        self.env = env
        self.peer = peer
        self.address = address
        self.isTLS = isTLS
        self.parser = RequestParser(limits: env.limits.parserLimits)
        self.phase = isTLS ? .handshaking : .idle
        // The first request's header clock starts at accept (or, with TLS, the handshake's clock does).
        self.deadline = now + (isTLS ? env.handshakeNanos : env.headerReadNanos)
    }

    // MARK: Interest

    var hasPendingOutput: Bool { outputOffset < output.count }
    var wantsReadEvents: Bool { phase != .closed && phase != .admitting && !readEOF && !readPaused }
    var wantsWriteEvents: Bool { phase != .closed && (hasPendingOutput || tlsWantsWrite) }

    /// Idle between requests after at least one response: a keep-alive connection that may be closed to make
    /// room (`EventLoop.evictOldestIdle`) or sooner under pressure.
    var isIdleKeepAlive: Bool { phase == .idle && requestCount > 0 && parser.isIdle }

    /// An idle keep-alive connection that has been idle at least `nanos` (the shortened idle timeout near the
    /// connection cap).
    func idleKeepAliveExpired(now: UInt64, after nanos: UInt64) -> Bool {
        isIdleKeepAlive && now &- idleSince >= nanos
    }

    // MARK: Socket events

    /// Epoll reported the socket readable.
    mutating func readable() { readBlocked = false }

    /// Epoll reported the socket writable.
    mutating func writable() {
        writeBlocked = false
        // OpenSSL wanted to write in order to read: reading may go on now.
        if tlsWantsWrite { readBlocked = false }
    }

    /// The TLS handshake finished: the connection waits for its first request.
    mutating func handshakeCompleted(now: UInt64) -> Action {
        guard phase == .handshaking else { return proceed(now: now) }
        tlsWantsWrite = false
        phase = .idle
        deadline = now + env.headerReadNanos
        readBlocked = false  // the client's first bytes may already sit in OpenSSL's buffer
        return proceed(now: now)
    }

    /// The TLS handshake needs the socket readable (`wantsWrite` false) or writable.
    mutating func handshakeWaits(wantsWrite: Bool) {
        tlsWantsWrite = wantsWrite
    }

    /// Bytes arrived. Returns whether the loop should keep reading in this wake-up.
    mutating func received(_ bytes: UnsafeRawBufferPointer, now: UInt64) -> Bool {
        if phase == .lingering {
            // Bounded per wake-up so a client still uploading cannot monopolise the loop; the linger deadline
            // bounds the total.
            discardedThisWakeUp += bytes.count
            return discardedThisWakeUp < 16 * env.readBufferSize
        }
        tlsWantsWrite = false
        parser.append(bytes)
        if phase == .idle {
            phase = .readingHead
            // The first request's clock started at accept (or handshake); later ones at their first byte.
            if requestCount > 0 || deadline == 0 { deadline = now + env.headerReadNanos }
            request.start = now
        }
        if phase == .readingHead && parser.bufferedBytes > env.maxBufferedWhileBusy {
            // More than any head can be: let the parser decide (and admission run) before reading further, so a
            // body sent with its head is not buffered before the request is admitted.
            readStoppedForHead = true
            return false
        }
        if (phase == .handling || phase == .writing) && parser.bufferedBytes > env.maxBufferedWhileBusy {
            // A client pipelining faster than we answer: stop reading until this response is out.
            readPaused = true
            return false
        }
        return true
    }

    /// The parser has looked at everything a head can be after `received` stopped reading for it: reading may go
    /// on. Returns whether it had stopped.
    mutating func resumeReadingAfterHead() -> Bool {
        guard readStoppedForHead else { return false }
        readStoppedForHead = false
        readBlocked = false
        return true
    }

    /// The read loop stopped: the socket would block (or, for TLS, OpenSSL waits for the socket to become
    /// writable), or `received` asked to stop.
    mutating func readStopped(tlsWantsWrite: Bool = false, now: UInt64) -> Action {
        readBlocked = true
        self.tlsWantsWrite = tlsWantsWrite
        discardedThisWakeUp = 0
        if phase == .lingering && closeWhenDrained { return close() }
        return proceed(now: now)
    }

    /// The client closed its side (read returned 0).
    mutating func readEOF(now: UInt64) -> Action {
        readEOF = true
        readBlocked = true
        if phase == .lingering { return close() }
        return proceed(now: now)
    }

    /// The socket (or TLS) failed, or epoll reported an error without input: nothing more can be done.
    mutating func failed() -> Action { close() }

    /// Part of `pendingOutput` was written.
    mutating func wrote(_ count: Int, now: UInt64) -> Action {
        outputOffset += count
        guard !hasPendingOutput else { return proceed(now: now) }
        // Keep a small buffer for the next response; drop one a large response grew.
        if output.capacity > 256 * 1024 {
            output = []
        } else {
            output.removeAll(keepingCapacity: true)
        }
        outputOffset = 0
        // A streamed body is complete only when its producer finished (`streamTaken`).
        if phase == .writing && stream == nil { completeResponse(now: now) }
        return proceed(now: now)
    }

    /// What the loop took from the response's body stream.
    mutating func streamTaken(_ taken: HTTPBodyStream.Taken, now: UInt64) -> Action {
        guard phase == .writing, stream != nil else { return proceed(now: now) }
        switch taken {
        case .bytes(let bytes):
            let before = output.count
            if streamChunked {
                output.append(contentsOf: Array(String(bytes.count, radix: 16).utf8))
                output.append(contentsOf: [0x0D, 0x0A])
                output.append(contentsOf: bytes)
                output.append(contentsOf: [0x0D, 0x0A])
            } else {
                output.append(contentsOf: bytes)
            }
            request.bytesOut += output.count - before
            // The write deadline runs per chunk: a stream may take longer than one write, not stall longer.
            deadline = now + env.writeNanos
        case .waiting:
            awaitingStream = true
        case .end:
            stream = nil
            if streamChunked {
                output.append(contentsOf: Array("0\r\n\r\n".utf8))
                request.bytesOut += 5
            } else if !hasPendingOutput {
                completeResponse(now: now)
            }
        case .failed:
            // Without the last chunk (or, for HTTP/1.0, cut short) the client sees the body is incomplete.
            stream = nil
            return close()
        }
        return proceed(now: now)
    }

    /// The body stream has something (after `.waiting`).
    mutating func streamReady(now: UInt64) -> Action {
        guard awaitingStream else { return phase == .closed ? .close : .wait }
        awaitingStream = false
        return proceed(now: now)
    }

    /// The socket takes no more bytes for now.
    mutating func writeWouldBlock() -> Action {
        writeBlocked = true
        return .wait
    }

    /// The unwritten response bytes.
    var pendingOutput: ArraySlice<UInt8> { output[outputOffset...] }

    /// Our side was shut down after the final response: linger (discard input) until EOF or the deadline.
    mutating func outputShutDown(now: UInt64) -> Action {
        if readEOF { return close() }
        phase = .lingering
        deadline = now + (lingerBriefly ? env.tickNanos : env.lingerNanos)
        readPaused = false
        readBlocked = false
        // Shutting down: discard what already arrived and close now. With an empty receive queue close() sends a
        // FIN, not a reset, so the response just written still reaches the client.
        if draining { closeWhenDrained = true }
        return .read
    }

    // MARK: Timer and shutdown

    /// The loop's tick: acts when the phase deadline passed. Reading phases get a 408 first.
    mutating func timerFired(now: UInt64) -> Action {
        guard deadline != 0 && now >= deadline else { return .wait }
        switch phase {
        case .readingHead, .admitting, .readingBody:
            lingerBriefly = true
            respondToParseError(HTTPParseError(.requestTimeout, "Request timed out"), now: now)
            return proceed(now: now)
        case .handshaking, .idle, .writing, .lingering:
            return close()
        case .handling, .closed:
            return .wait
        }
    }

    /// The server stops: idle connections close now, in-flight requests finish with `Connection: close`.
    mutating func beginDraining() -> Action {
        draining = true
        switch phase {
        case .idle, .handshaking, .lingering:
            return close()
        case .readingHead, .admitting, .readingBody, .handling, .writing:
            closeAfterWrite = true
            return .wait
        case .closed:
            return .close
        }
    }

    mutating func close() -> Action {
        phase = .closed
        deadline = 0
        return .close
    }

    // MARK: Driving

    /// The next thing to do after an action was performed.
    mutating func proceed(now: UInt64) -> Action {
        while true {
            if phase == .closed { return .close }
            if completionPending {
                completionPending = false
                return .requestCompleted
            }
            if hasPendingOutput && !writeBlocked { return .write }
            if phase == .writing && stream != nil && !hasPendingOutput && !awaitingStream { return .pullStream }
            if shutdownPending {
                shutdownPending = false
                return .shutdownOutput
            }
            if phase == .handshaking { return .wait }
            if wantsReadEvents && !readBlocked { return .read }
            switch phase {
            case .idle, .readingHead, .readingBody:
                if let action = parseStep(now: now) { return action }
            case .handshaking, .admitting, .handling, .writing, .lingering, .closed:
                return .wait
            }
        }
    }

    /// Everything the response to the current request is done: count it, then keep the connection or close it.
    private mutating func completeResponse(now: UInt64) {
        requestCount += 1
        let bytesIn = parser.consumedBytes - consumedAtStart
        consumedAtStart = parser.consumedBytes
        completed = CompletedRequest(
            method: request.head?.method, route: request.routePattern, status: request.status, bytesIn: bytesIn,
            bytesOut: request.bytesOut, start: request.start == 0 ? now : request.start, end: now,
            requestID: request.requestID, rejection: request.rejection)
        completionPending = true
        request = RequestState()
        if closeAfterWrite {
            shutdownPending = true
            return
        }
        phase = .idle
        deadline = now + env.idleNanos
        idleSince = now
        if readPaused {
            readPaused = false
            readBlocked = false
        }
        // Decrypted bytes may sit inside OpenSSL, invisible to epoll.
        if isTLS { readBlocked = false }
    }

    private var consumedAtStart = 0
}

/// One request whose response was fully written, for the access log and metrics.
struct CompletedRequest {
    var method: HTTPMethod?
    /// The route pattern, or `-` (no route, protocol error).
    var route = "-"
    var status = 0
    var bytesIn = 0
    var bytesOut = 0
    /// Monotonic ns: the request's first byte (or accept) and the end of the write.
    var start: UInt64 = 0
    var end: UInt64 = 0
    var requestID = ""
    /// Why the request was refused before routing, when it was.
    var rejection: HTTPParseError?
}
