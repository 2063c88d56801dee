import CLinux
import Clocks
import Foundation
import Locking
import Logging

/// Ignores SIGPIPE once per process: a write to a socket the peer closed must fail with EPIPE, not kill us.
/// (Every send also passes MSG_NOSIGNAL; OpenSSL's writes do not, hence the process-wide setting.)
private let ignoreSIGPIPE: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

/// An HTTP/1.1 server (optionally HTTPS) on epoll: one loop thread per core, each with its own `SO_REUSEPORT`
/// listener. Handlers run as Swift tasks; responses go back to the connection's loop to be written.
///
/// ```swift
/// var router = Router()
/// router.get("/health") { _ in .json(raw: Array(#"{"status":"ok"}"#.utf8)) }
/// let server = HTTPServer(configuration: .init(port: 8080), router: router, logger: logger)
/// let port = try server.start()
/// ```
///
/// Signals belong to the executable. A typical `main` ignores SIGTERM/SIGINT's default action and turns them
/// into a graceful shutdown with Dispatch signal sources:
/// ```swift
/// for sig in [SIGTERM, SIGINT] {
///     signal(sig, SIG_IGN)
///     let source = DispatchSource.makeSignalSource(signal: sig, queue: .main)
///     source.setEventHandler { Task { await server.shutdown() } }
///     source.resume()
///     sources.append(source)  // keep them alive
/// }
/// await server.waitUntilStopped()   // returns once every loop thread has exited
/// ```
package final class HTTPServer: Sendable {
    private enum State {
        case idle
        /// `start()` is binding; a concurrent `start()` fails, a concurrent `shutdown()` waits.
        case starting
        case running(loops: [EventLoop], port: Int)
        case stopping(loops: [EventLoop], port: Int)
        case stopped
    }

    private struct Shared {
        var state: State = .idle
        var runningLoops = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
        /// `shutdown()` arrived while `start()` was binding; honoured as soon as the loops run.
        var shutdownRequested = false
    }

    package let configuration: HTTPServerConfiguration
    private let router: Router
    private let logger: Logger
    private let onRequestsCompleted: (@Sendable ([AccessLogRecord]) -> Void)?
    private let errorResponse: (@Sendable (any Error) -> HTTPResponse?)?
    private let shared = Locked(Shared())
    private let context = Locked<ServerContext?>(nil)

    /// - Parameters:
    ///   - logger: receives one `Request completed` line per request at `info` (the access log) and errors.
    ///   - onRequestsCompleted: called on a loop thread with the requests it answered, once per loop iteration (or
    ///     every 256 requests), in order; every answered request is in exactly one call, the last ones before the
    ///     loop exits. Keep it cheap (feed metrics): it runs between the loop's socket events.
    ///   - errorResponse: turns an error a handler threw that is not an `HTTPResponseError` into a response (say,
    ///     503 with `Retry-After` while a backend is down); nil from it keeps the default: 500, error logged.
    package init(
        configuration: HTTPServerConfiguration, router: Router, logger: Logger = .disabled,
        onRequestsCompleted: (@Sendable ([AccessLogRecord]) -> Void)? = nil,
        errorResponse: (@Sendable (any Error) -> HTTPResponse?)? = nil
    ) {
        self.configuration = configuration
        self.router = router
        self.logger = logger
        self.onRequestsCompleted = onRequestsCompleted
        self.errorResponse = errorResponse
    }

    /// Binds the listeners and starts the loop threads.
    /// - Returns: the bound port (useful with `port: 0`).
    /// - Throws: `HTTPServerError` when binding or loading the TLS files fails; nothing is left running then.
    @discardableResult
    package func start() throws -> Int {
        _ = ignoreSIGPIPE
        let alreadyStarted = shared.withLock { shared -> Bool in
            guard case .idle = shared.state else { return true }
            shared.state = .starting
            return false
        }
        guard !alreadyStarted else { throw HTTPServerError.invalid("start", "server already started or stopped") }
        do {
            return try bindAndRun()
        } catch {
            // Back to idle so the caller may retry (e.g. with another port); wake anyone who waited meanwhile.
            let waiters = shared.withLock { shared -> [CheckedContinuation<Void, Never>] in
                shared.state = shared.shutdownRequested ? .stopped : .idle
                let waiters = shared.waiters
                shared.waiters.removeAll()
                return waiters
            }
            for waiter in waiters { waiter.resume() }
            throw error
        }
    }

    private func bindAndRun() throws -> Int {
        let tls = try configuration.tls.map(TLSContext.init)
        let context = ServerContext(
            router: router, limits: configuration.limits, logger: logger, tls: tls,
            serverName: configuration.serverName, onRequestsCompleted: onRequestsCompleted,
            errorResponse: errorResponse)
        var listeners: [Int32] = []
        var loops: [EventLoop] = []
        var port = configuration.port
        do {
            // An ephemeral port (0) is ours alone by construction; a fixed one is checked first.
            if port != 0 { try Listener.ensureAvailable(host: configuration.host, port: port) }
            for _ in 0..<configuration.eventLoopCount {
                let fd = try Listener.bind(host: configuration.host, port: port)
                listeners.append(fd)
                port = try Listener.boundPort(fd)
            }
            for (i, fd) in listeners.enumerated() {
                loops.append(
                    try EventLoop(index: i, listenFD: fd, context: context) { [weak self] in
                        self?.loopExited()
                    })
            }
        } catch {
            for fd in listeners.dropFirst(loops.count) { close(fd) }
            // Loops that were created own their listener.
            for loop in loops { loop.discardUnstarted() }
            throw error
        }
        self.context.withLock { $0 = context }
        let stopAtOnce = shared.withLock { shared -> Bool in
            shared.state =
                shared.shutdownRequested
                ? .stopping(loops: loops, port: port) : .running(loops: loops, port: port)
            shared.runningLoops = loops.count
            return shared.shutdownRequested
        }
        for loop in loops {
            NamedThread.start("http-loop-\(loop.index)") { loop.run() }
        }
        if stopAtOnce {
            for loop in loops { loop.post(.shutdown(grace: configuration.limits.shutdownGracePeriod.nanoseconds)) }
        }
        logger.info(
            "HTTP server started",
            [
                "host": configuration.host, "port": String(port), "loops": String(loops.count),
                "tls": configuration.tls == nil ? "off" : "on",
            ])
        return port
    }

    /// The bound port while running.
    package var port: Int? {
        shared.withLock { shared in
            switch shared.state {
            case .running(_, let port), .stopping(_, let port): return port
            case .idle, .starting, .stopped: return nil
            }
        }
    }

    /// Connections currently open (for metrics).
    package var openConnections: Int { context.withLock { $0?.openConnections.load(ordering: .relaxed) ?? 0 } }

    /// Requests answered since start (for metrics).
    package var completedRequests: Int { context.withLock { $0?.completedRequests.load(ordering: .relaxed) ?? 0 } }

    /// Connections accepted since start (for metrics).
    package var acceptedConnections: Int { context.withLock { $0?.acceptedConnections.load(ordering: .relaxed) ?? 0 } }

    /// Stops accepting, closes idle keep-alive connections at once, lets in-flight requests finish (their
    /// responses carry `Connection: close`) for up to `HTTPLimits.shutdownGracePeriod`, closes the rest, and
    /// returns when every loop thread has exited. Safe to call more than once and concurrently.
    package func shutdown() async {
        let began = beginShutdown()
        await waitUntilStopped()
        if began { logger.info("HTTP server stopped") }
    }

    /// Starts the drain `shutdown()` describes without waiting for it.
    /// - Returns: whether this call stopped running loops (false: not running, or already stopping).
    @discardableResult
    func beginShutdown() -> Bool {
        let loops = shared.withLock { shared -> [EventLoop] in
            switch shared.state {
            case .running(let loops, let port):
                shared.state = .stopping(loops: loops, port: port)
                return loops
            case .idle:
                shared.state = .stopped
                return []
            case .starting:
                shared.shutdownRequested = true
                return []
            case .stopping, .stopped:
                return []
            }
        }
        let grace = configuration.limits.shutdownGracePeriod.nanoseconds
        for loop in loops { loop.post(.shutdown(grace: grace)) }
        return !loops.isEmpty
    }

    /// Whether `start()` has not been called yet.
    var isIdle: Bool {
        shared.withLock { shared in
            if case .idle = shared.state { return true }
            return false
        }
    }

    /// The logger's label ("http", "ops-http"): the service name.
    var label: String { logger.label }

    /// Returns once the server has stopped (immediately if it never started or already stopped).
    package func waitUntilStopped() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = shared.withLock { shared -> Bool in
                switch shared.state {
                case .idle, .stopped: return true
                case .starting, .running, .stopping:
                    shared.waiters.append(continuation)
                    return false
                }
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func loopExited() {
        let waiters = shared.withLock { shared -> [CheckedContinuation<Void, Never>] in
            shared.runningLoops -= 1
            guard shared.runningLoops == 0 else { return [] }
            shared.state = .stopped
            let waiters = shared.waiters
            shared.waiters.removeAll()
            return waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
