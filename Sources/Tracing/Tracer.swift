/// Starts spans: decides sampling, makes ids, and hands ended spans to its sink (the batch processor). One per
/// process; `Tracer.disabled` (tracing off, the default) makes spans that record nothing but still carry a context,
/// so a caller's `traceparent` is still passed on to the job and the webhooks.
package struct Tracer: Sendable {
    package let sampler: Sampler
    private let sink: (any SpanSink)?

    /// - Parameter sink: where sampled spans go when they end; nil: nothing is recorded.
    package init(sampler: Sampler, sink: (any SpanSink)?) {
        self.sampler = sampler
        self.sink = sink
    }

    /// Records nothing.
    package static let disabled = Tracer(sampler: .alwaysOff, sink: nil)

    package var isEnabled: Bool { sink != nil }

    /// Starts a span, a child of `parent` (by default the task's `TraceContext.current`), or a new trace's root
    /// when there is none. The child keeps the parent's trace id, `tracestate` and random-trace-id flag.
    package func startSpan(
        _ name: String, kind: SpanKind = .internal, parent: TraceContext? = TraceContext.current,
        attributes: [Attribute] = []
    ) -> Span {
        let traceID = parent?.traceID ?? TraceID.random()
        let sampled = sink != nil && sampler.shouldSample(parent: parent, traceID: traceID)
        var flags = parent.map { $0.flags & TraceFlags.randomTraceID } ?? TraceFlags.randomTraceID
        if sampled { flags |= TraceFlags.sampled }
        let context = TraceContext(
            traceID: traceID, spanID: SpanID.random(), flags: flags,
            traceState: parent?.traceState ?? "")
        return Span(
            context: context, parent: parent, name: name, kind: kind, attributes: attributes,
            sink: sampled ? sink : nil)
    }
}
