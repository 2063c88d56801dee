/// Per request: parse → route → body → handler → response bytes.
extension HTTPConnectionStateMachine {
    /// One parser step while reading a request. Nil: go on (state changed, look again); an action: do it.
    mutating func parseStep(now: UInt64) -> Action? {
        if phase == .idle && !parser.isIdle {
            // Pipelined bytes were already buffered: the next request starts now.
            phase = .readingHead
            deadline = now + env.headerReadNanos
            request.start = now
        }
        let event = parser.next()
        // The parser has looked at what a head can be: reading may go on (a request is admitted first).
        let resumed = resumeReadingAfterHead()
        switch event {
        case .needMoreData:
            // The client finished sending: between requests that is a normal close; mid-request there is nobody
            // left to read an answer about the truncated request.
            if readEOF { return close() }
            return resumed ? nil : .wait
        case .head(let head):
            return startRequest(head, now: now)
        case .body(let body, let trailers):
            return dispatch(body: body, trailers: trailers, now: now)
        case .error(let error):
            respondToParseError(error, now: now)
            return nil
        }
    }

    /// The handler's (or admission check's) response for the request in `.handling`. Ignored otherwise: the
    /// connection timed out, closed or was reset meanwhile.
    mutating func responded(_ response: HTTPResponse, now: UInt64) -> Action {
        guard phase == .handling else {
            // Nobody will read it: its producer must not wait for that.
            response.stream?.close()
            return phase == .closed ? .close : .wait
        }
        sendResponse(response, now: now)
        return proceed(now: now)
    }

    /// The route's admission check passed and the body is reserved: read the body (asking for it with
    /// `100 Continue` when the client waits for that).
    mutating func admitted(now: UInt64) -> Action {
        guard phase == .admitting else { return phase == .closed ? .close : .wait }
        phase = .readingBody
        parser.reserveDeclaredBody()
        if request.expectsContinue { output.append(contentsOf: Self.continueLine) }
        return proceed(now: now)
    }

    /// The request was refused when its head arrived (`response` already carries the route's hook). Its body is
    /// not read: a small declared one (`discardableBodyBytes`) is dropped as it arrives and the connection stays,
    /// otherwise the answer goes out at once and the connection closes (the lingering close discards what the
    /// client still sends, without buffering it).
    mutating func refused(_ response: HTTPResponse, now: UInt64) -> Action {
        guard phase == .admitting else { return phase == .closed ? .close : .wait }
        switch request.head?.framing ?? BodyFraming.none {
        case .none:
            // The parser still holds the (empty) body event: answered when it comes (`dispatch`).
            request.refusal = response
            phase = .readingBody
        case .contentLength(let n) where n <= Self.discardableBodyBytes && !request.expectsContinue:
            request.refusal = response
            phase = .readingBody
        default:
            phase = .handling
            sendResponse(response, keepAlive: false, now: now)
        }
        return proceed(now: now)
    }

    /// The request (without its body), route and body bytes to reserve of the `.admit` just returned (once).
    mutating func takeAdmissionCall() -> (request: HTTPRequest, route: Router.Route, bodyBytes: Int)? {
        admissionCall.take()
    }

    /// A refused request's declared body up to this size is read and dropped, keeping the connection (and a
    /// pipelined client's order); a larger one is not read at all.
    static let discardableBodyBytes = 8 * 1024

    /// Nil: go on parsing; an action: do it (`.admit`).
    private mutating func startRequest(_ head: RequestHead, now: UInt64) -> Action? {
        request.head = head
        request.routePattern = "-"
        request.match = nil
        if let incoming = head.headers.first("x-request-id"), Self.isSaneRequestID(incoming) {
            request.requestID = incoming
        } else {
            request.requestID = env.nextRequestID()
        }
        let (path, query) = PercentDecoding.split(target: head.target)
        request.path = path
        request.query = query
        let match: Router.Match
        if let route = env.router.route(head.method, literalPath: path) {
            match = .found(route, parameters: [:])
        } else {
            guard let segments = PercentDecoding.segments(path: path) else {
                respondToParseError(.bad("Invalid percent-encoding in path"), now: now)
                return nil
            }
            match = env.router.match(head.method, segments)
        }
        request.match = match
        let limit: Int
        switch match {
        case .found(let route, _):
            request.routePattern = route.pattern
            limit = route.bodyLimit?.maxBytes ?? env.limits.maxBodyBytes
        case .notFound, .methodNotAllowed:
            if head.framing != .none && head.framing != .contentLength(0) {
                // Nobody wants this body: answer now (no 100 Continue) and close rather than read it.
                phase = .handling
                sendResponse(Self.defaultResponse(for: match), keepAlive: false, now: now)
                return nil
            }
            limit = 0
        }
        let bodyBytes: Int
        switch parser.beginBody(limit: limit) {
        case .tooLarge:
            respondToParseError(.bodyTooLarge, now: now)
            return nil
        case .read:
            phase = .readingBody
            deadline = now + env.bodyReadNanos
            // RFC 9110 §10.1.1: the route exists and the declared length fits; the body is asked for once the
            // request is admitted (`admitted`).
            request.expectsContinue = head.expectsContinue
            if case .contentLength(let n) = head.framing { bodyBytes = n } else { bodyBytes = limit }
        case .noBody:
            phase = .readingBody
            bodyBytes = 0
        }
        guard case .found(let route, let parameters) = match else {
            if request.expectsContinue { output.append(contentsOf: Self.continueLine) }
            return nil
        }
        guard let items = query.map(PercentDecoding.queryItems) ?? [] else {
            respondToParseError(.bad("Invalid percent-encoding in query"), now: now)
            return nil
        }
        let built = HTTPRequest(
            method: head.method, rawTarget: head.target, path: String(path), parameters: parameters, query: items,
            headers: head.headers, peer: peer, clientAddress: address, routePattern: route.pattern,
            requestID: request.requestID, isTLS: isTLS, minorVersion: head.minorVersion)
        request.built = built
        guard route.admission != nil || bodyBytes > 0 else { return nil }
        // Admission (rate limits, the body budget) is decided now, before any body byte is read or asked for.
        phase = .admitting
        admissionCall = (built, route, bodyBytes)
        return .admit
    }

    private static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private mutating func dispatch(body: [UInt8], trailers: HTTPHeaders, now: UInt64) -> Action? {
        guard request.head != nil, let match = request.match else { return close() }
        phase = .handling
        deadline = 0
        guard case .found(let route, _) = match else {
            sendResponse(Self.defaultResponse(for: match), now: now)
            return nil
        }
        if let refusal = request.refusal {
            // Refused at admission; its small body was read only to keep the connection.
            sendResponse(refusal, now: now)
            return nil
        }
        guard var built = request.built.take() else { return close() }
        built.body = body
        built.trailers = trailers
        handlerCall = (built, route)
        return .runHandler
    }

    /// The request and route of the `.runHandler` just returned (once; the machine keeps no copy).
    mutating func takeHandlerCall() -> (request: HTTPRequest, route: Router.Route)? {
        handlerCall.take()
    }

    static func defaultResponse(for match: Router.Match) -> HTTPResponse {
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
    mutating func respondToParseError(_ error: HTTPParseError, now: UInt64) {
        var response: HTTPResponse
        if error.isBodyTooLarge, case .found(let route, let parameters)? = request.match, let head = request.head {
            response =
                route.bodyLimit?.error.map { HTTPResponse(error: $0) }
                ?? HTTPResponse(error: HTTPError(error.status, detail: error.reason))
            // The route's hook sees the request without its (refused) body.
            let bodiless = HTTPRequest(
                method: head.method, rawTarget: head.target, path: String(request.path), parameters: parameters,
                headers: head.headers, peer: peer, clientAddress: address, routePattern: route.pattern,
                requestID: request.requestID, isTLS: isTLS, minorVersion: head.minorVersion)
            response = route.finish(bodiless, response)
        } else {
            response = HTTPResponse(error: HTTPError(error.status, detail: error.reason))
        }
        request.rejection = error
        if request.start == 0 { request.start = now }
        if request.requestID.isEmpty { request.requestID = env.nextRequestID() }
        phase = .handling
        sendResponse(response, keepAlive: false, now: now)
    }

    /// Serializes `response` for the current request and starts writing it.
    private mutating func sendResponse(_ response: HTTPResponse, keepAlive requested: Bool = true, now: UInt64) {
        let head = request.head
        var keepAlive = requested && (head?.keepAlive ?? false) && !draining && !closeAfterWrite && !readEOF
        if let max = env.limits.maxRequestsPerConnection, requestCount + 1 >= max { keepAlive = false }
        let code = response.status.code
        if let body = response.stream {
            if head?.method == .head || code < 200 || code == 204 || code == 304 {
                body.close()
            } else {
                stream = body
                streamChunked = (head?.minorVersion ?? 1) >= 1
                // Without chunks only the close tells an HTTP/1.0 client where the body ends.
                if !streamChunked { keepAlive = false }
            }
        }
        closeAfterWrite = !keepAlive
        let before = output.count - outputOffset
        ResponseSerializer.serialize(
            response, into: &output, date: env.date(), omitBody: head?.method == .head, keepAlive: keepAlive,
            minorVersion: head?.minorVersion ?? 1, requestID: request.requestID, serverName: env.serverName,
            headerCache: env.headerCache)
        request.status = response.status.code
        request.bytesOut = output.count - outputOffset - before
        phase = .writing
        deadline = now + env.writeNanos
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
