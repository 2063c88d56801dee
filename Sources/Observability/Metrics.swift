import Locking

/// A small Prometheus registry: counters, gauges and histograms with bounded label sets, written through the typed
/// handles of `MetricCatalogue.swift` (`CounterMetric`, `GaugeMetric`, `HistogramMetric`), never by name.
///
/// Labels are only ever route patterns, methods, statuses, reasons and states from fixed sets (see `MetricLabel`),
/// never tokens, ids, raw paths or raw methods, so the number of series stays bounded whatever clients send. As a
/// last line, each family holds at most `maxSeriesPerFamily` series: past it, new label sets are counted in one
/// series whose every label is `other`.
///
/// `render()` copies the state under the lock (copy-on-write: constant time) and formats outside it, so the event
/// loops that count requests never wait for a scrape. Its collectors run one scrape at a time: each reads its
/// owner's state and writes gauges from it, and two scrapes interleaving could land an older read's values after a
/// newer one's, leaving a stale gauge until the next change.
package final class Metrics: Sendable {
    /// The per-family series cap `init()` uses. The label sets the server produces stay far below it (the largest,
    /// `push_http_requests_total`, is routes × methods × statuses actually seen).
    package static let defaultMaxSeriesPerFamily = 1000
    /// The value every label takes in a family's overflow series.
    package static let overflowLabelValue = "other"

    /// Series one family may hold before new label sets go to the overflow series.
    package let maxSeriesPerFamily: Int
    private let state = Locked(State())
    /// The callbacks run before each render, under their own lock: one scrape's collectors at a time, never inside
    /// `state`'s lock (they write through it).
    private let collectors = Locked<[@Sendable (Metrics) -> Void]>([])

    private enum Kind: String { case counter, gauge, histogram }

    private struct State {
        var families: [String: Family] = [:]
        var order: [String] = []

        /// Declares `family` unless it already is: the first declaration (or use) fixes its place in the output.
        mutating func ensure(_ family: MetricFamily, _ kind: Kind, _ buckets: [Double]) {
            guard families[family.name] == nil else { return }
            families[family.name] = Family(kind: kind, help: family.help, labels: family.labels, buckets: buckets)
            order.append(family.name)
        }
    }

    private struct Family {
        var kind: Kind
        var help: String
        /// Label names in series-key order (the catalogue's).
        var labels: [String] = []
        var buckets: [Double] = []
        /// label string (`route="/x",status="200"`) → value or histogram state
        var values: [String: Double] = [:]
        var histograms: [String: Histogram] = [:]

        var seriesCount: Int { kind == .histogram ? histograms.count : values.count }

        /// The series `key` is counted in: itself while the family has room (or already has it), else the
        /// overflow series, whose every label is `other`.
        func series(_ key: String, _ labels: KeyValuePairs<String, String>, cap: Int) -> String {
            series(key, names: labels.lazy.map(\.key), cap: cap)
        }

        func series(_ key: String, names: some Sequence<String>, cap: Int) -> String {
            let exists = kind == .histogram ? histograms[key] != nil : values[key] != nil
            if exists || seriesCount < cap { return key }
            return Metrics.labelString(names.map { ($0, Metrics.overflowLabelValue) })
        }

        mutating func add(_ amount: Double, _ key: String, _ labels: KeyValuePairs<String, String>, cap: Int) {
            values[series(key, labels, cap: cap), default: 0] += amount
        }

        mutating func add(_ amount: Double, _ key: String, _ labels: [(String, String)], cap: Int) {
            values[series(key, names: labels.lazy.map(\.0), cap: cap), default: 0] += amount
        }

        mutating func set(_ value: Double, _ key: String, _ labels: KeyValuePairs<String, String>, cap: Int) {
            values[series(key, labels, cap: cap)] = value
        }

        mutating func observe(_ value: Double, _ key: String, _ labels: KeyValuePairs<String, String>, cap: Int) {
            guard kind == .histogram else { return }
            let series = series(key, labels, cap: cap)
            if histograms[series] == nil {
                histograms[series] = Histogram(counts: Array(repeating: 0, count: buckets.count))
            }
            // Optional chaining mutates the stored histogram in place (no copy of it while the lock is held).
            if let index = buckets.firstIndex(where: { value <= $0 }) { histograms[series]?.counts[index] += 1 }
            histograms[series]?.sum += value
            histograms[series]?.count += 1
        }

        /// Adds counts tallied elsewhere (`MetricsBatch`); counts made for other bucket bounds are ignored.
        mutating func merge(_ tallied: HistogramCounts, _ key: String, _ labels: [(String, String)], cap: Int) {
            guard kind == .histogram, tallied.count > 0, tallied.buckets == buckets else { return }
            let series = series(key, names: labels.lazy.map(\.0), cap: cap)
            if histograms[series] == nil {
                histograms[series] = Histogram(counts: Array(repeating: 0, count: buckets.count))
            }
            for (index, n) in tallied.counts.enumerated() where n > 0 { histograms[series]?.counts[index] += n }
            histograms[series]?.sum += tallied.sum
            histograms[series]?.count += tallied.count
        }
    }

    private struct Histogram {
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    /// A registry; `maxSeriesPerFamily` (at least 1) bounds each family's series.
    package init(maxSeriesPerFamily: Int = Metrics.defaultMaxSeriesPerFamily) {
        self.maxSeriesPerFamily = max(1, maxSeriesPerFamily)
    }

    /// Default latency buckets in seconds: 0.5 ms … 10 s.
    package static let latencyBuckets: [Double] = [
        0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    /// Declares a family (idempotent): its `# HELP` and `# TYPE` lines appear from now on, in declaration order,
    /// even before its first value. A family used before any `declare` is declared then.
    package func declare(_ metric: CounterMetric) { declare(metric.family, .counter, []) }
    package func declare(_ metric: GaugeMetric) { declare(metric.family, .gauge, []) }
    package func declare(_ metric: HistogramMetric) { declare(metric.family, .histogram, metric.buckets) }

    private func declare(_ family: MetricFamily, _ kind: Kind, _ buckets: [Double]) {
        state.withLock { $0.ensure(family, kind, buckets) }
    }

    /// Adds to a counter.
    package func increment(
        _ metric: CounterMetric, _ labels: KeyValuePairs<String, String> = [:], by amount: Double = 1
    ) {
        update(metric.family, .counter, [], labels) { $0.add(amount, $1, labels, cap: $2) }
    }

    /// Sets a gauge.
    package func set(_ metric: GaugeMetric, _ labels: KeyValuePairs<String, String> = [:], to value: Double) {
        update(metric.family, .gauge, [], labels) { $0.set(value, $1, labels, cap: $2) }
    }

    /// Records one observation in a histogram.
    package func observe(_ metric: HistogramMetric, _ labels: KeyValuePairs<String, String> = [:], _ value: Double) {
        update(metric.family, .histogram, metric.buckets, labels) { $0.observe(value, $1, labels, cap: $2) }
    }

    /// Checks `labels` against the family's names, then applies `change` to the family (declared first if it was
    /// not) with the series key of `labels` and the per-family series cap, under the lock.
    private func update(
        _ family: MetricFamily, _ kind: Kind, _ buckets: [Double], _ labels: KeyValuePairs<String, String>,
        _ change: (inout Family, String, Int) -> Void
    ) {
        family.check(labels.lazy.map(\.key))
        let key = Self.labelString(labels)
        let cap = maxSeriesPerFamily
        state.withLock { state in
            state.ensure(family, kind, buckets)
            change(&state.families[family.name]!, key, cap)  // `ensure` just made sure it is there
        }
    }

    /// Applies every increment and histogram count of `batch` under one acquisition of the lock.
    package func apply(_ batch: MetricsBatch) {
        guard !batch.isEmpty else { return }
        let cap = maxSeriesPerFamily
        state.withLock { state in
            for counter in batch.counters {
                state.ensure(counter.metric.family, .counter, [])
                state.families[counter.metric.family.name]?.add(counter.amount, counter.key, counter.labels, cap: cap)
            }
            for histogram in batch.histograms {
                let metric = histogram.metric
                state.ensure(metric.family, .histogram, metric.buckets)
                state.families[metric.family.name]?.merge(histogram.counts, histogram.key, histogram.labels, cap: cap)
            }
        }
    }

    /// Registers a callback run before each render, to copy gauges from their owners (queue depth, streams).
    package func addCollector(_ collector: @escaping @Sendable (Metrics) -> Void) {
        collectors.withLock { $0.append(collector) }
    }

    /// Drops every series whose label `name` has a value `keep` refuses, in every family with that label (the
    /// series of an instance no longer served: the label set is bounded by the served set, not by every instance
    /// ever served). The overflow series (`other`) stays.
    package func retainSeries(label name: String, where keep: (String) -> Bool) {
        state.withLock { state in
            for (familyName, family) in state.families {
                guard let index = family.labels.firstIndex(of: name) else { continue }
                var gone: [String] = []
                for key in Array(family.values.keys) + Array(family.histograms.keys) {
                    guard let value = Self.labelValues(key, names: family.labels)?[index],
                        value != Self.overflowLabelValue, !keep(value)
                    else { continue }
                    gone.append(key)
                }
                for key in gone {
                    state.families[familyName]?.values.removeValue(forKey: key)
                    state.families[familyName]?.histograms.removeValue(forKey: key)
                }
            }
        }
    }

    /// The label values of a series key written by `labelString` for `names`, unescaped; nil when the key is not
    /// one (another family's label names).
    package static func labelValues(_ key: String, names: [String]) -> [String]? {
        var values: [String] = []
        var rest = Substring(key)
        for (i, name) in names.enumerated() {
            if i > 0 {
                guard rest.first == "," else { return nil }
                rest = rest.dropFirst()
            }
            guard rest.hasPrefix(name + "=\"") else { return nil }
            rest = rest.dropFirst(name.count + 2)
            var value = ""
            var escaped = false
            var closed = false
            while let ch = rest.first {
                rest = rest.dropFirst()
                if escaped {
                    value.append(ch == "n" ? "\n" : ch)
                    escaped = false
                } else if ch == "\\" {
                    escaped = true
                } else if ch == "\"" {
                    closed = true
                    break
                } else {
                    value.append(ch)
                }
            }
            guard closed else { return nil }
            values.append(value)
        }
        return rest.isEmpty ? values : nil
    }

    /// The current value of a counter series (tests).
    package func value(_ metric: CounterMetric, _ labels: KeyValuePairs<String, String> = [:]) -> Double {
        value(metric.family, labels)
    }

    /// The current value of a gauge series (tests).
    package func value(_ metric: GaugeMetric, _ labels: KeyValuePairs<String, String> = [:]) -> Double {
        value(metric.family, labels)
    }

    private func value(_ family: MetricFamily, _ labels: KeyValuePairs<String, String>) -> Double {
        let key = Self.labelString(labels)
        return state.withLock { $0.families[family.name]?.values[key] ?? 0 }
    }

    /// How many series a family holds (tests; the cap's effect).
    package func seriesCount(_ family: MetricFamily) -> Int {
        state.withLock { $0.families[family.name]?.seriesCount ?? 0 }
    }

    /// Prometheus text exposition format 0.0.4.
    package func render() -> String {
        collectors.withLock { collectors in
            for collector in collectors { collector(self) }
        }
        // Copy-on-write: taking the snapshot is constant time; the formatting below runs without the lock.
        let (families, order) = state.withLock { ($0.families, $0.order) }
        var out = ""
        for name in order {
            guard let family = families[name] else { continue }
            out += "# HELP \(name) \(family.help)\n# TYPE \(name) \(family.kind.rawValue)\n"
            switch family.kind {
            case .counter, .gauge:
                for (key, value) in family.values.sorted(by: { $0.key < $1.key }) {
                    out += "\(name)\(key.isEmpty ? "" : "{\(key)}") \(Self.format(value))\n"
                }
            case .histogram:
                for (key, h) in family.histograms.sorted(by: { $0.key < $1.key }) {
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

    /// The series key of call-site labels (see below).
    package static func labelString(_ labels: KeyValuePairs<String, String>) -> String {
        // Lazily, no intermediate array: this runs twice per HTTP request (the request counter and the latency
        // histogram).
        labelString(labels.lazy.map { ($0.key, $0.value) })
    }

    /// `name="value",…` in the order given, values escaped: the key of a series in its family.
    static func labelString(_ labels: some Sequence<(String, String)>) -> String {
        var out = ""
        out.reserveCapacity(64)
        for (i, (key, value)) in labels.enumerated() {
            if i > 0 { out += "," }
            out += key
            out += "=\""
            out += escape(value)
            out += "\""
        }
        return out
    }

    /// Label values escape backslash, quote and newline (exposition format rules).
    static func escape(_ value: String) -> String {
        // Nearly every value (route patterns, methods, statuses) has none of the three: no per-character walk.
        if !value.utf8.contains(where: { $0 == 0x5C || $0 == 0x22 || $0 == 0x0A }) { return value }
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

    package static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
