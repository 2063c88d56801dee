import Foundation
import XCTest

/// The catalogue is the one list of metric families: every handle is made in `MetricCatalogue.swift`, each name
/// once, and each family is described in docs/OPERATIONS.md ("Metrics") for the operators who scrape it.
final class MetricCatalogueTests: XCTestCase {
    private let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")

    private func text(_ path: String) throws -> String {
        try String(contentsOf: repository.appendingPathComponent(path), encoding: .utf8)
    }

    /// `name` of every `CounterMetric("name", …)`, `GaugeMetric(…)` and `HistogramMetric(…)` in `source`.
    private func families(in source: String) -> [String] {
        guard source.contains("Metric(") else { return [] }  // most files: no regex run (slow in debug builds)
        // The name may open the next line (swift format wraps a long initialiser there).
        let pattern = #/(?:Counter|Gauge|Histogram)Metric\(\s*"([a-z_]+)"/#
        return source.matches(of: pattern).map { String($0.output.1) }
    }

    func testEveryFamilyIsMadeInTheCatalogueOnlyAndNamedOnce() throws {
        let names = families(in: try text("Sources/Observability/MetricCatalogue.swift"))
        XCTAssertGreaterThan(names.count, 40)
        XCTAssertEqual(Set(names).count, names.count, "a name is in the catalogue twice")
        XCTAssertTrue(names.allSatisfy { $0.hasPrefix("push_") })
        let sources = repository.appendingPathComponent("Sources")
        let files =
            FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
        XCTAssertFalse(files.isEmpty)
        for file in files where file.lastPathComponent != "MetricCatalogue.swift" {
            let made = families(in: try String(contentsOf: file, encoding: .utf8))
            XCTAssertEqual(made, [], "\(file.lastPathComponent) makes a metric handle outside the catalogue")
        }
    }

    func testEveryFamilyIsDocumentedInOperations() throws {
        let operations = try text("docs/OPERATIONS.md")
        for name in families(in: try text("Sources/Observability/MetricCatalogue.swift")) {
            XCTAssertTrue(operations.contains("`\(name)"), "\(name) is not in docs/OPERATIONS.md")
        }
    }
}
