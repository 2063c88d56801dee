import Lifecycle
import Locking

/// What the fakes did, in order, with a way to wait for an entry (no sleeps: waiters are resumed by `append`).
final class Journal: Sendable {
    private struct State {
        var entries: [String] = []
        var waiters: [(String, CheckedContinuation<Void, Never>)] = []
    }

    private let state = Locked(State())

    var entries: [String] { state.withLock { $0.entries } }

    func append(_ entry: String) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.entries.append(entry)
            let ready = state.waiters.filter { $0.0 == entry }.map(\.1)
            state.waiters.removeAll { $0.0 == entry }
            return ready
        }
        for waiter in ready { waiter.resume() }
    }

    /// Returns once `entry` was appended (at once if it already was).
    func wait(for entry: String) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let present = state.withLock { state -> Bool in
                if state.entries.contains(entry) { return true }
                state.waiters.append((entry, continuation))
                return false
            }
            if present { continuation.resume() }
        }
    }
}

/// A latch the test opens; waiting ignores cancellation, like a drain that takes its time.
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let open = state.withLock { state -> Bool in
                if !state.open { state.waiters.append(continuation) }
                return state.open
            }
            if open { continuation.resume() }
        }
    }
}

struct FakeError: Error, Equatable {
    let message: String
}

/// A service that journals "<name> started", waits until its task is cancelled, journals "<name> cancelled", then
/// drains: waits for `drain` (when given), throws `failOnStop` (when given), and journals "<name> returned".
/// With `failAtStart`, it throws right after starting instead.
struct FakeService: Service {
    let name: String
    let journal: Journal
    var drain: Gate?
    var failAtStart: FakeError?
    var returnAtStart = false

    func run() async throws {
        journal.append("\(name) started")
        if let failAtStart {
            journal.append("\(name) returned")
            throw failAtStart
        }
        if !returnAtStart {
            await untilCancelled()
            journal.append("\(name) cancelled")
            await drain?.wait()
        }
        journal.append("\(name) returned")
    }
}

/// Returns when the calling task is cancelled (at once if it already is).
func untilCancelled() async {
    let (stream, continuation) = AsyncStream<Never>.makeStream()
    await withTaskCancellationHandler {
        for await _ in stream {}
    } onCancel: {
        continuation.finish()
    }
}
