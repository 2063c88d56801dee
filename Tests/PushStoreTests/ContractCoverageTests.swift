import Foundation
import XCTest

/// Every contract method runs on every backend: a method added to a `…Contract` class without its runner lines in
/// `ContractRunners.swift` would otherwise never run (XCTest on Linux does not run inherited test methods).
final class ContractCoverageTests: XCTestCase {
    func testEveryContractMethodHasARunnerOnEveryBackend() throws {
        let contractDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Contract")
        // Every runner file: ContractRunners.swift (SQLite, in memory) and ContractRunners+PostgreSQL.swift.
        var runners = ""
        for file in try FileManager.default.contentsOfDirectory(atPath: contractDirectory.path)
        where file.hasPrefix("ContractRunners") {
            runners += try String(contentsOf: contractDirectory.appendingPathComponent(file), encoding: .utf8)
        }
        var missing: [String] = []
        var methods = 0
        for file in try FileManager.default.contentsOfDirectory(atPath: contractDirectory.path)
        where file.hasSuffix("Contract.swift") {
            let source = try String(contentsOf: contractDirectory.appendingPathComponent(file), encoding: .utf8)
            guard let contract = Self.firstCapture(#"final class (\w+Contract): StoreContract"#, in: source).first else {
                continue
            }
            for method in Self.firstCapture(#"\n    func (test\w+)\(\) async throws"#, in: source) {
                methods += 1
                for backend in ["sqlite", "inMemory", "postgresql"] where !runners.contains("runContract(.\(backend), \(contract).\(method))") {
                    missing.append("try await runContract(.\(backend), \(contract).\(method))")
                }
            }
        }
        XCTAssertGreaterThan(methods, 40, "the contract files were not found next to this test")
        XCTAssertEqual(missing, [], "add these runners to ContractRunners.swift (PostgreSQL: ContractRunners+PostgreSQL.swift)")
    }

    /// The first capture group of every match of `pattern`.
    private static func firstCapture(_ pattern: String, in text: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).compactMap { match in
            Range(match.range(at: 1), in: text).map { String(text[$0]) }
        }
    }
}
