/// A route handler. It runs as a Swift task, never on an event-loop thread.
package typealias HTTPHandler = @Sendable (HTTPRequest) async throws -> HTTPResponse

/// A route handler that runs on the event-loop thread, right after the request is read: no task, no hop to the
/// Swift concurrency pool and back (two thread wake-ups per request, the main cost of a trivial route; see
/// docs/BENCHMARKS.md, HTTP). Only for answers computed at once from the request and memory: it must not block,
/// wait or do I/O, and may hold a lock only for a moment — every other connection of the loop waits for it.
package typealias HTTPLoopHandler = @Sendable (HTTPRequest) throws -> HTTPResponse

/// A route's admission check: runs on the event-loop thread as soon as the request head is in, before the body is
/// read or `100 Continue` sent, so it sees the request without its body. Throwing an `HTTPResponseError` answers
/// with it at once (a large body is then never read: the connection closes after the answer); returning lets the
/// body be read and the handler run.
///
/// Why: refusing a request (a rate limit) costs almost nothing here, while a handler task costs a hop to the Swift
/// concurrency pool and back (thread wake-ups on both sides). An abusive client whose requests are refused thus
/// cannot take the CPU that legitimate requests need (docs/BENCHMARKS.md, soak). It must not block: no I/O, no
/// waiting, only locks held for a moment.
package typealias HTTPAdmission = @Sendable (HTTPRequest) throws -> Void

/// A route's last word on each of its responses, whoever produced it: the handler, a refusing admission check,
/// the error path (500, or the server's `errorResponse` such as a 503) or the route's body-limit error. Used for
/// header fields every answer of a route needs, such as CORS headers, which a browser needs on errors too to let
/// the page read them. Runs on the loop or in the handler's task: it must be cheap and must not block.
package typealias HTTPResponseHook = @Sendable (HTTPRequest, inout HTTPResponse) -> Void

/// Maps method + path to handlers.
///
/// Patterns are `/`-separated segments: literal text, `:name` (one segment), or a final `*name` (the rest of the
/// path, at least one segment, segments joined with `/`). Each segment is percent-decoded before matching, so
/// `%2F` never splits a segment and `; , = @` are ordinary characters. Literal segments win over `:name`, which
/// wins over `*name`. HEAD is served by the GET route (without a body) unless a HEAD route exists.
package struct Router: Sendable {
    /// A class: a match, the connection's request state and the loop's handler call each hold the route, and a
    /// reference is one retain where this struct's six fields were six (measured on the per-request path).
    final class Route: Sendable {
        let pattern: String
        let parameterNames: [String]
        let bodyLimit: BodyLimit?
        let admission: HTTPAdmission?
        let handler: Handler
        let responseHook: HTTPResponseHook?

        init(
            pattern: String, parameterNames: [String], bodyLimit: BodyLimit?, admission: HTTPAdmission?,
            handler: Handler, responseHook: HTTPResponseHook?
        ) {
            self.pattern = pattern
            self.parameterNames = parameterNames
            self.bodyLimit = bodyLimit
            self.admission = admission
            self.handler = handler
            self.responseHook = responseHook
        }

        /// `response` after the route's hook (if any).
        func finish(_ request: HTTPRequest, _ response: HTTPResponse) -> HTTPResponse {
            guard let responseHook else { return response }
            var response = response
            responseHook(request, &response)
            return response
        }
    }

    /// Where a route's handler runs.
    enum Handler: Sendable {
        case task(HTTPHandler)
        case onEventLoop(HTTPLoopHandler)
    }

    struct Node: Sendable {
        var literals: [String: Int] = [:]
        var parameter: Int?
        var wildcard: Int?
        /// A few methods per path at most: a scan comparing small strings is cheaper than hashing the method.
        var routes: [(method: HTTPMethod, route: Route)] = []
        /// Root only: the node of every pattern made of literal segments only (`/health`), by its text, so such a
        /// path needs no segment array and no tree walk (`route(_:literalPath:)`). Kept in the root node rather
        /// than in `Router` itself so that `Router`'s layout, which other modules compile against, stays one array.
        var literalPaths: [String: Int] = [:]

        func route(for method: HTTPMethod) -> Route? {
            for entry in routes where entry.method == method { return entry.route }
            return nil
        }
    }

    /// Result of `match`.
    enum Match {
        case found(Route, parameters: [String: String])
        case methodNotAllowed(allow: [String])
        case notFound
    }

    /// Node 0 is the root; it also holds `literalPaths`.
    private var nodes: [Node] = [Node()]

    /// An empty router (every request gets 404).
    package init() {}

    /// Registers `handler` for `method` on `pattern`.
    /// - Parameters:
    ///   - bodyLimit: overrides the server-wide `HTTPLimits.maxBodyBytes` (and its error) for this route.
    ///   - admission: a cheap check run on the event loop before `handler` (see `HTTPAdmission`).
    ///   - responseHook: applied to every response of the route, errors included (see `HTTPResponseHook`).
    package mutating func add(
        _ method: HTTPMethod, _ pattern: String, bodyLimit: BodyLimit? = nil,
        admission: HTTPAdmission? = nil, responseHook: HTTPResponseHook? = nil,
        handler: @escaping HTTPHandler
    ) {
        add(
            method, pattern,
            Route(
                pattern: pattern, parameterNames: [], bodyLimit: bodyLimit, admission: admission,
                handler: .task(handler), responseHook: responseHook))
    }

    /// Registers `handler` to run on the event loop (see `HTTPLoopHandler`) for `method` on `pattern`.
    package mutating func add(
        _ method: HTTPMethod, _ pattern: String, bodyLimit: BodyLimit? = nil,
        admission: HTTPAdmission? = nil, responseHook: HTTPResponseHook? = nil,
        onEventLoop handler: @escaping HTTPLoopHandler
    ) {
        add(
            method, pattern,
            Route(
                pattern: pattern, parameterNames: [], bodyLimit: bodyLimit, admission: admission,
                handler: .onEventLoop(handler), responseHook: responseHook))
    }

    /// `add(.get, pattern, onEventLoop:)`: a cheap GET answered on the loop (health checks, static documents).
    package mutating func get(_ pattern: String, onEventLoop handler: @escaping HTTPLoopHandler) {
        add(.get, pattern, onEventLoop: handler)
    }

    private mutating func add(_ method: HTTPMethod, _ pattern: String, _ route: Route) {
        var node = 0
        var names: [String] = []
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
        for (i, segment) in segments.enumerated() {
            if segment.hasPrefix(":") {
                names.append(String(segment.dropFirst()))
                node = child(of: node, \.parameter)
            } else if segment.hasPrefix("*") {
                precondition(i == segments.count - 1, "a *rest parameter must be the last segment")
                names.append(String(segment.dropFirst()))
                node = child(of: node, \.wildcard)
            } else {
                let key = String(segment)
                if let next = nodes[node].literals[key] {
                    node = next
                } else {
                    nodes.append(Node())
                    nodes[node].literals[key] = nodes.count - 1
                    node = nodes.count - 1
                }
            }
        }
        if names.isEmpty && pattern.utf8.first == UInt8(ascii: "/") { nodes[0].literalPaths[pattern] = node }
        let named = Route(
            pattern: route.pattern, parameterNames: names, bodyLimit: route.bodyLimit,
            admission: route.admission, handler: route.handler, responseHook: route.responseHook)
        if let i = nodes[node].routes.firstIndex(where: { $0.method == method }) {
            nodes[node].routes[i].route = named
        } else {
            nodes[node].routes.append((method, named))
        }
    }

    /// `add(.get, pattern, bodyLimit:, admission:, handler:)`.
    package mutating func get(
        _ pattern: String, bodyLimit: BodyLimit? = nil, admission: HTTPAdmission? = nil,
        handler: @escaping HTTPHandler
    ) {
        add(.get, pattern, bodyLimit: bodyLimit, admission: admission, handler: handler)
    }
    /// `add(.post, pattern, bodyLimit:, admission:, handler:)`.
    package mutating func post(
        _ pattern: String, bodyLimit: BodyLimit? = nil, admission: HTTPAdmission? = nil,
        handler: @escaping HTTPHandler
    ) {
        add(.post, pattern, bodyLimit: bodyLimit, admission: admission, handler: handler)
    }
    /// `add(.put, pattern, bodyLimit:, admission:, handler:)`.
    package mutating func put(
        _ pattern: String, bodyLimit: BodyLimit? = nil, admission: HTTPAdmission? = nil,
        handler: @escaping HTTPHandler
    ) {
        add(.put, pattern, bodyLimit: bodyLimit, admission: admission, handler: handler)
    }
    /// `add(.delete, pattern, bodyLimit:, admission:, handler:)`.
    package mutating func delete(
        _ pattern: String, bodyLimit: BodyLimit? = nil, admission: HTTPAdmission? = nil,
        handler: @escaping HTTPHandler
    ) {
        add(.delete, pattern, bodyLimit: bodyLimit, admission: admission, handler: handler)
    }

    private mutating func child(of node: Int, _ key: WritableKeyPath<Node, Int?>) -> Int {
        if let next = nodes[node][keyPath: key] { return next }
        nodes.append(Node())
        nodes[node][keyPath: key] = nodes.count - 1
        return nodes.count - 1
    }

    /// The route `match` finds for `method` on `path` (still percent-encoded) when the path is exactly a pattern of
    /// literal segments with a route for the method (or GET, for HEAD), else nil and `match` decides. The same
    /// answer: with no escape, the decoded segments are the path's own text, and the all-literal path is the first
    /// one `match` tries (literals before parameters at every level).
    func route(_ method: HTTPMethod, literalPath path: Substring) -> Route? {
        guard !nodes[0].literalPaths.isEmpty, !path.utf8.contains(UInt8(ascii: "%")),
            let node = nodes[0].literalPaths[String(path)]
        else { return nil }
        return nodes[node].route(for: method) ?? (method == .head ? nodes[node].route(for: .get) : nil)
    }

    /// Finds the route for `method` and decoded path `segments`.
    func match(_ method: HTTPMethod, _ segments: [String]) -> Match {
        var found: Match?
        var allow = Set<String>()
        var captures: [String] = []
        // Stops at the first node with a route for the method: no list of candidates on the common path.
        visit(0, segments[...], &captures) { node, values in
            if let route = nodes[node].route(for: method) ?? (method == .head ? nodes[node].route(for: .get) : nil) {
                var parameters: [String: String] = [:]
                for (name, value) in zip(route.parameterNames, values) { parameters[name] = value }
                found = .found(route, parameters: parameters)
                return true
            }
            for entry in nodes[node].routes { allow.insert(entry.method.rawValue) }
            if nodes[node].route(for: .get) != nil { allow.insert("HEAD") }
            return false
        }
        if let found { return found }
        return allow.isEmpty ? .notFound : .methodNotAllowed(allow: allow.sorted())
    }

    /// Depth-first, in priority order (literal, parameter, wildcard), every node that matches with routes, until
    /// `body` returns true. Returns whether it did.
    @discardableResult
    private func visit(
        _ node: Int, _ rest: ArraySlice<String>, _ captures: inout [String],
        _ body: (Int, [String]) -> Bool
    ) -> Bool {
        guard let segment = rest.first else {
            return !nodes[node].routes.isEmpty && body(node, captures)
        }
        if let next = nodes[node].literals[segment], visit(next, rest.dropFirst(), &captures, body) {
            return true
        }
        if let next = nodes[node].parameter, !segment.isEmpty {
            captures.append(segment)
            defer { captures.removeLast() }
            if visit(next, rest.dropFirst(), &captures, body) { return true }
        }
        if let next = nodes[node].wildcard, !nodes[next].routes.isEmpty {
            let joined = rest.joined(separator: "/")
            if !joined.isEmpty { return body(next, captures + [joined]) }
        }
        return false
    }
}
