import Foundation

/// A small Prometheus registry: counters, gauges and histograms with bounded label sets.
///
/// Labels are only ever route patterns, status codes, reasons and states — never tokens, ids or raw paths — so
/// the number of series stays bounded whatever clients send.
public final class Metrics: @unchecked Sendable {
    // @unchecked: every mutable field is only touched while holding `lock`.
    private let lock = NSLock()
    private var families: [String: Family] = [:]
    private var order: [String] = []
    private var collectors: [@Sendable (Metrics) -> Void] = []

    private enum Kind: String { case counter, gauge, histogram }

    private struct Family {
        var kind: Kind
        var help: String
        var buckets: [Double] = []
        /// label string (`route="/x",status="200"`) → value or histogram state
        var values: [String: Double] = [:]
        var histograms: [String: Histogram] = [:]
    }

    private struct Histogram {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    public init() {}

    /// Default latency buckets in seconds: 0.5 ms … 10 s.
    public static let latencyBuckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    /// Declares a metric (idempotent); `help` becomes the `# HELP` line.
    public func declare(_ name: String, counter help: String) { declare(name, .counter, help, []) }
    public func declare(_ name: String, gauge help: String) { declare(name, .gauge, help, []) }
    public func declare(_ name: String, histogram help: String, buckets: [Double] = Metrics.latencyBuckets) {
        declare(name, .histogram, help, buckets.sorted())
    }

    private func declare(_ name: String, _ kind: Kind, _ help: String, _ buckets: [Double]) {
        lock.lock()
        defer { lock.unlock() }
        if families[name] == nil {
            families[name] = Family(kind: kind, help: help, buckets: buckets)
            order.append(name)
        }
    }

    /// Adds to a counter.
    public func increment(_ name: String, _ labels: KeyValuePairs<String, String> = [:], by amount: Double = 1) {
        let key = Self.labelString(labels)
        lock.lock()
        families[name]?.values[key, default: 0] += amount
        lock.unlock()
    }

    /// Sets a gauge.
    public func set(_ name: String, _ labels: KeyValuePairs<String, String> = [:], to value: Double) {
        let key = Self.labelString(labels)
        lock.lock()
        families[name]?.values[key] = value
        lock.unlock()
    }

    /// Records one observation in a histogram.
    public func observe(_ name: String, _ labels: KeyValuePairs<String, String> = [:], _ value: Double) {
        let key = Self.labelString(labels)
        lock.lock()
        defer { lock.unlock() }
        guard var family = families[name], family.kind == .histogram else { return }
        var histogram = family.histograms[key] ?? Histogram(counts: Array(repeating: 0, count: family.buckets.count))
        if let index = family.buckets.firstIndex(where: { value <= $0 }) { histogram.counts[index] += 1 }
        histogram.sum += value
        histogram.count += 1
        family.histograms[key] = histogram
        families[name] = family
    }

    /// Registers a callback run before each render, to copy gauges from their owners (queue depth, streams).
    public func addCollector(_ collector: @escaping @Sendable (Metrics) -> Void) {
        lock.lock()
        collectors.append(collector)
        lock.unlock()
    }

    /// The current value of a counter or gauge series (tests and `/ready`).
    public func value(_ name: String, _ labels: KeyValuePairs<String, String> = [:]) -> Double {
        let key = Self.labelString(labels)
        lock.lock()
        defer { lock.unlock() }
        return families[name]?.values[key] ?? 0
    }

    /// Prometheus text exposition format 0.0.4.
    public func render() -> String {
        lock.lock()
        let pending = collectors
        lock.unlock()
        for collector in pending { collector(self) }

        lock.lock()
        defer { lock.unlock() }
        var out = ""
        for name in order {
            guard let family = families[name] else { continue }
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
            switch family.kind {
            case .counter, .gauge:
                for key in family.values.keys.sorted() {
                    out += "\(name)\(key.isEmpty ? "" : "{\(key)}") \(Self.format(family.values[key]!))\n"
                }
            case .histogram:
                for key in family.histograms.keys.sorted() {
                    let h = family.histograms[key]!
                    let prefix = key.isEmpty ? "" : key + ","
                    var cumulative: UInt64 = 0
                    for (index, bound) in family.buckets.enumerated() {
                        cumulative += h.counts[index]
                        out += "\(name)_bucket{\(prefix)le=\"\(Self.format(bound))\"} \(cumulative)\n"
                    }
                    out += "\(name)_bucket{\(prefix)le=\"+Inf\"} \(h.count)\n"
                    out += "\(name)_sum\(key.isEmpty ? "" : "{\(key)}") \(Self.format(h.sum))\n"
                    out += "\(name)_count\(key.isEmpty ? "" : "{\(key)}") \(h.count)\n"
                }
            }
        }
        return out
    }

    static func labelString(_ labels: KeyValuePairs<String, String>) -> String {
        labels.map { "\($0.key)=\"\(escape($0.value))\"" }.joined(separator: ",")
    }

    /// Label values escape backslash, quote and newline (exposition format rules).
    static func escape(_ value: String) -> String {
        var out = ""
        for ch in value {
            switch ch {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(ch)
            }
        }
        return out
    }

    static func format(_ value: Double) -> String {
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
