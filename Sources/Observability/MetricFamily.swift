/// A metric family's identity: its name, `# HELP` text and the names of its labels, in the order they are written.
/// Only `MetricCatalogue.swift` makes them (with the typed handles `CounterMetric`, `GaugeMetric`,
/// `HistogramMetric`), so every family the server can write is listed in one place, and `Metrics` knows the kind
/// and help of any handle it is given: none can be used undeclared.
package struct MetricFamily: Sendable, Hashable {
    /// The Prometheus name (`push_…`).
    package let name: String
    /// The `# HELP` line's text.
    package let help: String
    /// Label names, in series-key order; call sites give exactly these.
    package let labels: [String]

    /// Traps in debug builds (the unit tests) when a call site names other labels than the catalogue, or in
    /// another order: a series with other label names would be a new, undocumented one.
    func check(_ names: some Sequence<String>) {
        assert(names.elementsEqual(labels), "\(name): labels \(Array(names)), the catalogue says \(labels)")
    }
}

/// A counter in the catalogue (`Metrics.increment`, `MetricsBatch.increment`).
package struct CounterMetric: Sendable, Hashable {
    package let family: MetricFamily

    /// Catalogue only (tests make their own with `@testable`).
    package init(_ name: String, help: String, labels: [String] = []) {
        family = MetricFamily(name: name, help: help, labels: labels)
    }
}

/// A gauge in the catalogue (`Metrics.set`).
package struct GaugeMetric: Sendable, Hashable {
    package let family: MetricFamily

    /// Catalogue only (tests make their own with `@testable`).
    package init(_ name: String, help: String, labels: [String] = []) {
        family = MetricFamily(name: name, help: help, labels: labels)
    }
}

/// A histogram in the catalogue (`Metrics.observe`, `MetricsBatch.observe`), with its bucket bounds.
package struct HistogramMetric: Sendable, Hashable {
    package let family: MetricFamily
    /// Upper bounds, ascending.
    package let buckets: [Double]

    /// Catalogue only (tests make their own with `@testable`).
    package init(_ name: String, help: String, labels: [String] = [], buckets: [Double] = Metrics.latencyBuckets) {
        family = MetricFamily(name: name, help: help, labels: labels)
        self.buckets = buckets.sorted()
    }
}
