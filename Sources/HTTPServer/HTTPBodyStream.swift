import Dispatch
import Locking

/// A response body written while it is sent (`HTTPResponse.stream`): the handler answers at once with a stream, and
/// a producer (any thread, typically one that reads a database snapshot) writes chunks into it. The server sends
/// them with `Transfer-Encoding: chunked` as the socket takes them; `write` blocks the producer while more than
/// `maxBuffered` bytes wait, so a slow client slows the producer instead of filling memory.
package final class HTTPBodyStream: Sendable {
    /// Why `write` failed: the connection is gone (closed by the client, timed out, server shutting down).
    package struct Closed: Error, Sendable {}

    private struct State {
        var chunks: [[UInt8]] = []
        var buffered = 0
        var finished = false
        var failed = false
        var closed = false
        /// The loop's wake-up, armed when it found nothing to send; called (once) by the next write or finish.
        var wake: (@Sendable () -> Void)?
        var producerWaiting = false
    }

    private let state = Locked(State())
    private let producerWake = DispatchSemaphore(value: 0)
    let maxBuffered: Int

    /// - Parameter maxBuffered: bytes written but not yet taken by the server before `write` blocks. Default 1 MiB.
    package init(maxBuffered: Int = 1 << 20) { self.maxBuffered = max(1, maxBuffered) }

    /// Appends `bytes` to the body; blocks while more than `maxBuffered` bytes wait to be sent.
    /// - Throws: `Closed` when the connection went away (nothing more will be sent).
    package func write(_ bytes: [UInt8]) throws(Closed) {
        guard !bytes.isEmpty else { return }
        while true {
            let (accepted, wake) = state.withLock { state -> (Bool?, (@Sendable () -> Void)?) in
                if state.closed || state.finished { return (nil, nil) }
                guard state.buffered < maxBuffered else {
                    state.producerWaiting = true
                    return (false, nil)
                }
                state.chunks.append(bytes)
                state.buffered += bytes.count
                defer { state.wake = nil }
                return (true, state.wake)
            }
            guard let accepted else { throw Closed() }
            if accepted {
                wake?()
                return
            }
            producerWake.wait()
        }
    }

    /// Ends the body. `failed`: the producer could not finish; the server closes the connection without the last
    /// chunk, so the client sees an incomplete response rather than a short one that looks whole.
    package func finish(failed: Bool = false) {
        let wake = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.finished else { return nil }
            state.finished = true
            state.failed = failed
            defer { state.wake = nil }
            return state.wake
        }
        wake?()
    }

    // MARK: The server's side

    /// What the server takes from the stream.
    enum Taken: Equatable {
        /// Bytes to send (more may follow).
        case bytes([UInt8])
        /// Nothing now: `wake` will be called when there is.
        case waiting
        /// The body is complete.
        case end
        /// The producer failed.
        case failed
    }

    /// Takes everything buffered; when there is nothing, arms `wake` for the next write or finish.
    func take(wake: @escaping @Sendable () -> Void) -> Taken {
        let (taken, release) = state.withLock { state -> (Taken, Bool) in
            if !state.chunks.isEmpty {
                let bytes = state.chunks.count == 1 ? state.chunks[0] : Array(state.chunks.joined())
                state.chunks.removeAll()
                state.buffered = 0
                let release = state.producerWaiting
                state.producerWaiting = false
                return (.bytes(bytes), release)
            }
            if state.finished { return (state.failed ? .failed : .end, false) }
            state.wake = wake
            return (.waiting, false)
        }
        if release { producerWake.signal() }
        return taken
    }

    /// The connection is gone: a blocked or later `write` throws `Closed`.
    func close() {
        let release = state.withLock { state -> Bool in
            state.closed = true
            state.wake = nil
            defer { state.producerWaiting = false }
            return state.producerWaiting
        }
        if release { producerWake.signal() }
    }
}
