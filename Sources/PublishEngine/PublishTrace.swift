import Locking
import Observability
import PushStore
import Tracing

/// The spans of one run of a publish (or of one shard of it), on whichever node claimed it: a CONSUMER span
/// "process publish", a child of the request's span through the trace context stored with the job, and under it
/// one CLIENT span per platform per checkpoint batch with the batch's counts and outcome reasons (never one span
/// per device: a publish reaches millions). Results arrive on the senders' threads: `record` only takes a lock
/// and counts; the spans start at a batch's first result and end at its checkpoint.
final class PublishTrace: Sendable {
    let span: Span
    private let tracer: Tracer

    /// The trace of the run the current task works for: the lanes' recorders take it when they are made.
    @TaskLocal static var current: PublishTrace?
    private let batches = Locked<[Platform: Batch]>([:])

    private struct Batch {
        let span: Span
        var count = 0
        var accepted = 0
        /// Results by status and reason: a handful of classes per batch, not per device.
        var outcomes: [Outcome: Int] = [:]
    }

    private struct Outcome: Hashable {
        var status: Int
        var reason: String
    }

    /// The run's span, or nil when tracing is off. A job accepted while tracing was off (no stored context)
    /// starts a new trace.
    static func start(_ tracer: Tracer, claimed: ClaimedJob, nodeID: String) -> PublishTrace? {
        guard tracer.isEnabled else { return nil }
        let job = claimed.job
        let parent = job.traceParent.flatMap { TraceContext(traceparent: $0, tracestate: job.traceState) }
        var attributes = [
            Attribute("messaging.system", "push-server"), Attribute("messaging.operation.type", "process"),
            Attribute("messaging.operation.name", "process"), Attribute("messaging.destination.name", "publish"),
            Attribute("beams.instance_id", job.instanceID), Attribute("beams.publish_id", job.publishID),
            Attribute("push.attempt", claimed.attempt), Attribute("push.node", nodeID),
        ]
        if let shard = claimed.shard { attributes.append(Attribute("push.shard", shard.number)) }
        let name = claimed.shard == nil ? "process publish" : "process publish shard"
        return PublishTrace(
            tracer: tracer,
            span: tracer.startSpan(
                name, kind: .consumer, parent: parent,
                attributes: attributes))
    }

    private init(tracer: Tracer, span: Span) {
        self.tracer = tracer
        self.span = span
    }

    /// Counts one final result of `platform` into its open batch (starting the batch's span on its first result).
    func record(_ platform: Platform, status: Int, reason: String?) {
        guard span.isRecording else { return }
        let outcome = Outcome(status: status, reason: MetricLabel.reason(reason))
        let accepted = (200...299).contains(status) && reason == nil
        batches.withLock { batches in
            if batches[platform] == nil {
                let span = tracer.startSpan(
                    "send \(Self.system(platform))", kind: .client, parent: self.span.context,
                    attributes: [
                        Attribute("messaging.system", Self.system(platform)),
                        Attribute("messaging.operation.type", "send"),
                        Attribute("messaging.operation.name", "send"),
                    ])
                batches[platform] = Batch(span: span)
            }
            batches[platform]!.count += 1
            if accepted { batches[platform]!.accepted += 1 }
            batches[platform]!.outcomes[outcome, default: 0] += 1
        }
    }

    /// Ends every open batch's span with its counts: at each checkpoint and at the end of the run.
    func endBatches() {
        let ended = batches.withLock { batches in
            defer { batches = [:] }
            return Array(batches.values)
        }
        for batch in ended {
            batch.span.set("messaging.batch.message_count", batch.count)
            batch.span.set("push.accepted", batch.accepted)
            batch.span.set("push.failed", batch.count - batch.accepted)
            let sorted = batch.outcomes.sorted {
                $0.value != $1.value ? $0.value > $1.value : $0.key.reason < $1.key.reason
            }
            for (outcome, count) in sorted {
                batch.span.addEvent(
                    "outcome",
                    [
                        Attribute("push.status", outcome.status),
                        Attribute("push.reason", outcome.reason), Attribute("count", count),
                    ])
            }
            if batch.accepted == 0 { batch.span.setStatus(.error, "no notification of the batch was accepted") }
            batch.span.end()
        }
    }

    /// Ends the run's span with how the run ended (`finished`, `handed_back`, …).
    func end(_ outcome: String) {
        endBatches()
        span.set("push.run.outcome", outcome)
        if outcome == PublishState.failed.rawValue { span.setStatus(.error, "the publish failed") }
        span.end()
    }

    /// `messaging.system` of a platform's sends (custom values: the semantic conventions name none for push).
    static func system(_ platform: Platform) -> String {
        platform == .web ? "webpush" : platform.rawValue
    }
}
