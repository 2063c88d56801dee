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
        switch parser.next() {
        case .needMoreData:
            // The client finished sending: between requests that is a normal close; mid-request there is nobody
            // left to read an answer about the truncated request.
            return readEOF ? close() : .wait
        case .head(let head):
            startRequest(head, now: now)
            return nil
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
        guard phase == .handling else { return phase == .closed ? .close : .wait }
        sendResponse(response, now: now)
        return proceed(now: now)
    }

    private mutating func startRequest(_ head: RequestHead, now: UInt64) {
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
                return
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
                return
            }
            limit = 0
        }
        switch parser.beginBody(limit: limit) {
        case .tooLarge:
            respondToParseError(.bodyTooLarge, now: now)
        case .read:
            phase = .readingBody
            deadline = now + env.bodyReadNanos
            if head.expectsContinue {
                // RFC 9110 §10.1.1: the route exists and the declared length fits, so ask for the body.
                output.append(contentsOf: Self.continueLine)
            }
        case .noBody:
            phase = .readingBody
        }
    }

    private static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    private mutating func dispatch(body: [UInt8], trailers: HTTPHeaders, now: UInt64) -> Action? {
        guard let head = request.head, let match = request.match else { return close() }
        phase = .handling
        deadline = 0
        guard case .found(let route, let parameters) = match else {
            sendResponse(Self.defaultResponse(for: match), now: now)
            return nil
        }
        let path = request.path
        guard let query = request.query.map(PercentDecoding.queryItems) ?? [] else {
            respondToParseError(.bad("Invalid percent-encoding in query"), now: now)
            return nil
        }
        let built = HTTPRequest(
            method: head.method, rawTarget: head.target, path: String(path), parameters: parameters, query: query,
            headers: head.headers, trailers: trailers, body: body, peer: peer, clientAddress: address,
            routePattern: route.pattern, requestID: request.requestID, isTLS: isTLS, minorVersion: head.minorVersion)
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
            response = route.bodyLimit?.error.map { HTTPResponse(error: $0) }
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
