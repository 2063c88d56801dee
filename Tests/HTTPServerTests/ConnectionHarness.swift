@testable import HTTPServer

/// Plays the event loop for one `HTTPConnectionStateMachine`, without a socket: bytes the "peer" sent wait in
/// `inbox`, the socket takes `writeCapacity` more bytes, handlers on the loop run at once and task handlers wait
/// for `respond(_:)`. Every action is performed as `EventLoop+Connection.swift` does.
struct ConnectionHarness {
    static let date = "Sun, 06 Nov 1994 08:49:37 GMT"
    static let bufferSize = 1024

    var machine: HTTPConnectionStateMachine
    var now: UInt64 = 1_000_000_000
    var inbox: [UInt8] = []
    var peerClosedInput = false
    /// Bytes the socket accepts before a write would block.
    var writeCapacity = Int.max
    var written: [UInt8] = []
    /// Requests whose (task) handler is running.
    var handling: [HTTPRequest] = []
    var completed: [CompletedRequest] = []
    var outputShutdowns = 0
    /// Each `.admit`: the request as admission saw it (no body) and the body bytes it reserves.
    var admissions: [(request: HTTPRequest, bodyBytes: Int)] = []
    /// What admission answers; nil admits.
    var admissionRefusal: HTTPResponse?
    var closed = false

    init(limits: HTTPLimits = ConnectionHarness.limits, tls: Bool = false, draining: Bool = false) {
        var router = Router()
        router.get("/health", onEventLoop: { _ in .json(raw: Array(#"{"status":"ok"}"#.utf8)) })
        router.post("/echo") { request in HTTPResponse(status: .ok, body: request.body) }
        router.post("/small", bodyLimit: BodyLimit(maxBytes: 8)) { _ in .text("ok") }
        router.get("/fail", onEventLoop: { _ in throw HTTPError(.badRequest, detail: "Nope") })
        // With an admission check (what it answers is the harness's `admissionRefusal`), and no body.
        router.add(.get, "/guarded", admission: { _ in }, onEventLoop: { _ in .text("guarded") })
        let env = ConnectionEnvironment(
            router: router, limits: limits, serverName: nil, requestIDPrefix: "t",
            readBufferSize: Self.bufferSize, lingerNanos: 2_000_000_000,
            tickNanos: 100_000_000, fixedDate: Self.date)
        machine = HTTPConnectionStateMachine(
            env: env, peer: "192.0.2.1:5000", address: "192.0.2.1", isTLS: tls,
            now: now)
    }

    static var limits: HTTPLimits {
        var limits = HTTPLimits()
        limits.headerReadTimeout = .seconds(10)
        limits.bodyReadTimeout = .seconds(30)
        limits.idleTimeout = .seconds(60)
        limits.writeTimeout = .seconds(5)
        limits.maxBodyBytes = 1024
        return limits
    }

    var text: String { String(decoding: written, as: UTF8.self) }
    var phase: HTTPConnectionStateMachine.Phase { machine.phase }

    /// Number of `HTTP/1.1 NNN` status lines written so far.
    func statusLines(_ code: Int) -> Int { text.components(separatedBy: "HTTP/1.1 \(code) ").count - 1 }

    /// The peer sends `bytes`; epoll reports the socket readable.
    mutating func send(_ bytes: String) {
        inbox += Array(bytes.utf8)
        machine.readable()
        run(machine.proceed(now: now))
    }

    /// The peer closes its sending side.
    mutating func sendEOF() {
        peerClosedInput = true
        machine.readable()
        run(machine.proceed(now: now))
    }

    /// The socket takes `bytes` more; epoll reports it writable.
    mutating func drainSocket(_ bytes: Int = .max) {
        writeCapacity = bytes
        machine.writable()
        run(machine.proceed(now: now))
    }

    /// The oldest running task handler answers.
    mutating func respond(_ response: HTTPResponse = .text("done")) {
        if !handling.isEmpty { handling.removeFirst() }
        run(machine.responded(response, now: now))
    }

    /// Time passes; the loop's tick fires.
    mutating func advance(seconds: Double) {
        now += UInt64(seconds * 1e9)
        run(machine.timerFired(now: now))
    }

    mutating func beginDraining() { run(machine.beginDraining()) }

    mutating func run(_ first: HTTPConnectionStateMachine.Action) {
        var action = first
        while true {
            switch action {
            case .wait:
                return
            case .close:
                closed = true
                return
            case .read:
                action = read()
            case .write:
                let pending = machine.pendingOutput
                let n = min(writeCapacity, pending.count)
                if n == 0 {
                    action = machine.writeWouldBlock()
                } else {
                    written += pending.prefix(n)
                    if writeCapacity != .max { writeCapacity -= n }
                    action = machine.wrote(n, now: now)
                }
            case .admit:
                let (request, _, bodyBytes) = machine.takeAdmissionCall()!
                admissions.append((request, bodyBytes))
                action = admissionRefusal.map { machine.refused($0, now: now) } ?? machine.admitted(now: now)
            case .runHandler:
                // The machine sets the call right before returning the action: a nil here is a bug the trap shows.
                let (request, route) = machine.takeHandlerCall()!
                switch route.handler {
                case .onEventLoop(let handler):
                    let response = (try? handler(request)) ?? HTTPResponse(error: HTTPError(.badRequest, detail: "x"))
                    action = machine.responded(response, now: now)
                case .task:
                    handling.append(request)
                    return
                }
            case .requestCompleted:
                completed.append(machine.completed)
                action = machine.proceed(now: now)
            case .shutdownOutput:
                outputShutdowns += 1
                action = machine.outputShutDown(now: now)
            case .pullStream:
                // What the loop does: take what the stream holds (a later write wakes nobody here).
                action = machine.streamTaken(machine.stream?.take(wake: {}) ?? .end, now: now)
            }
        }
    }

    private mutating func read() -> HTTPConnectionStateMachine.Action {
        while !inbox.isEmpty {
            let chunk = Array(inbox.prefix(Self.bufferSize))
            inbox.removeFirst(chunk.count)
            let more = chunk.withUnsafeBytes { machine.received($0, now: now) }
            if !more { return machine.readStopped(now: now) }
        }
        return peerClosedInput ? machine.readEOF(now: now) : machine.readStopped(now: now)
    }
}
