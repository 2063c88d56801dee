import Clocks
import Glibc
import Locking

/// A span in progress. Cheap to hand around (a class behind one lock); `end()` records it once, later calls do
/// nothing. A span that is not sampled (or from a disabled tracer) records nothing but still has a context, so
/// what it propagates (`traceparent`, a stored job) keeps the trace id.
package final class Span: Sendable {
    package let context: TraceContext
    package let isRecording: Bool
    private let parentSpanID: SpanID?
    private let parentIsRemote: Bool
    private let kind: SpanKind
    private let startWallNanos: UInt64
    private let startMonotonic: UInt64
    private let sink: (any SpanSink)?
    private let state: Locked<State>

    private struct State {
        var name: String
        var attributes: [Attribute]
        var events: [SpanEvent] = []
        var statusCode = SpanStatusCode.unset
        var statusMessage = ""
        var droppedAttributes = 0
        var droppedEvents = 0
        var ended = false
    }

    init(
        context: TraceContext, parent: TraceContext?, name: String, kind: SpanKind, attributes: [Attribute],
        sink: (any SpanSink)?
    ) {
        self.context = context
        isRecording = sink != nil
        parentSpanID = parent?.spanID
        parentIsRemote = parent?.isRemote ?? false
        self.kind = kind
        startWallNanos = Self.wallNanos()
        startMonotonic = MonotonicClock.now()
        self.sink = sink
        state = Locked(
            State(
                name: name, attributes: Array(attributes.prefix(SpanLimits.attributes)),
                droppedAttributes: max(0, attributes.count - SpanLimits.attributes)))
    }

    /// Sets (or replaces) an attribute.
    package func set(_ attribute: Attribute) {
        guard isRecording else { return }
        state.withLock { state in
            if let index = state.attributes.firstIndex(where: { $0.key == attribute.key }) {
                state.attributes[index] = attribute
            } else if state.attributes.count < SpanLimits.attributes {
                state.attributes.append(attribute)
            } else {
                state.droppedAttributes += 1
            }
        }
    }

    package func set(_ key: String, _ value: String) { set(Attribute(key, value)) }
    package func set(_ key: String, _ value: Int) { set(Attribute(key, value)) }

    /// Adds an event at the current time.
    package func addEvent(_ name: String, _ attributes: [Attribute] = []) {
        guard isRecording else { return }
        let event = SpanEvent(name: name, timeUnixNano: nowNanos(), attributes: attributes)
        state.withLock { state in
            if state.events.count < SpanLimits.events { state.events.append(event) } else { state.droppedEvents += 1 }
        }
    }

    /// Sets the status; an `ok` is final (later calls cannot turn it into an error), as the specification asks.
    package func setStatus(_ code: SpanStatusCode, _ message: String = "") {
        guard isRecording else { return }
        state.withLock { state in
            guard state.statusCode != .ok else { return }
            state.statusCode = code
            state.statusMessage = code == .error ? message : ""
        }
    }

    /// Renames the span (an HTTP server span learns its route late).
    package func rename(_ name: String) {
        guard isRecording else { return }
        state.withLock { $0.name = name }
    }

    /// Ends the span and hands it to the exporter's queue; never blocks (a full queue drops it).
    package func end() {
        guard let sink else { return }
        let end = nowNanos()
        let data: SpanData? = state.withLock { state in
            guard !state.ended else { return nil }
            state.ended = true
            return SpanData(
                context: context, parentSpanID: parentSpanID, parentIsRemote: parentIsRemote,
                name: state.name, kind: kind, startTimeUnixNano: startWallNanos, endTimeUnixNano: end,
                attributes: state.attributes, events: state.events, statusCode: state.statusCode,
                statusMessage: state.statusMessage, droppedAttributes: state.droppedAttributes,
                droppedEvents: state.droppedEvents)
        }
        if let data { sink.enqueue(data) }
    }

    /// Wall time now, measured as the start's wall time plus the monotonic time since: a span's duration does not
    /// jump with the system clock.
    private func nowNanos() -> UInt64 {
        startWallNanos &+ MonotonicClock.elapsed(since: startMonotonic).nanoseconds
    }

    static func wallNanos() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return UInt64(max(0, spec.tv_sec)) &* 1_000_000_000 &+ UInt64(max(0, spec.tv_nsec))
    }
}

/// Where ended spans go: the batch processor (or a test's recorder).
package protocol SpanSink: Sendable {
    /// Takes a finished span without blocking.
    func enqueue(_ span: SpanData)
}
