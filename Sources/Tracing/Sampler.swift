/// Which new spans are recorded and exported (head sampling, decided when a span starts). The OpenTelemetry
/// samplers named by `OTEL_TRACES_SAMPLER`: `always_on`, `always_off`, `traceidratio` and their parent-based forms.
/// Unsampled spans still carry their context, so the trace id reaches other nodes and webhooks either way.
package enum Sampler: Sendable, Equatable {
    case alwaysOn
    case alwaysOff
    /// Samples a root when its trace id falls under the ratio (0...1). The decision depends on the trace id alone,
    /// so every node decides the same way for one trace.
    case traceIDRatio(Double)
    /// Follows the parent's sampled flag when there is a parent; uses `root` for a span that starts a trace.
    indirect case parentBased(root: Sampler)

    /// The default of the OpenTelemetry SDKs: `parentbased_always_on`.
    package static let `default` = Sampler.parentBased(root: .alwaysOn)

    /// Reads `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` (the ratio, default 1.0). nil for an unknown name
    /// or a ratio outside 0...1.
    package init?(name: String, argument: String?) {
        let ratio: Double?
        if let argument, !argument.isEmpty {
            guard let value = Double(argument), (0...1).contains(value) else { return nil }
            ratio = value
        } else {
            ratio = nil
        }
        switch name.lowercased() {
        case "always_on": self = .alwaysOn
        case "always_off": self = .alwaysOff
        case "traceidratio": self = .traceIDRatio(ratio ?? 1)
        case "parentbased_always_on": self = .parentBased(root: .alwaysOn)
        case "parentbased_always_off": self = .parentBased(root: .alwaysOff)
        case "parentbased_traceidratio": self = .parentBased(root: .traceIDRatio(ratio ?? 1))
        default: return nil
        }
    }

    /// Whether a span of `traceID` with this parent (nil: a root) is sampled.
    package func shouldSample(parent: TraceContext?, traceID: TraceID) -> Bool {
        switch self {
        case .alwaysOn: return true
        case .alwaysOff: return false
        case .traceIDRatio(let ratio):
            // The low 8 bytes (random even in W3C level 1 ids), top bit dropped, against ratio × 2^63: ratio 1
            // samples every id, ratio 0 none.
            if ratio >= 1 { return true }
            if ratio <= 0 { return false }
            let bound = UInt64(ratio * 9_223_372_036_854_775_808.0)
            return traceID.low >> 1 < bound
        case .parentBased(let root):
            if let parent { return parent.isSampled }
            return root.shouldSample(parent: nil, traceID: traceID)
        }
    }
}
