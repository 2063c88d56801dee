import Foundation
import Testing

/// Every contract method is a parameterised Swift Testing test: a `test…` method of a `…Contract` class without
/// the `@Test(arguments: ContractBackend.selected)` line above it would compile and never run, and an XCTest
/// assertion inside a Swift Testing test records nothing (this toolchain's XCTest does not report to Swift Testing),
/// so a test using one could never fail.
struct ContractAttributeTests {
    @Test func everyContractMethodRunsOnTheSelectedBackendsWithSwiftTestingExpectations() throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Contract")
        var methods = 0
        var problems: [String] = []
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        where file.hasSuffix("Contract.swift") {
            let lines = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                .components(separatedBy: "\n")
            for (number, line) in lines.enumerated() {
                if line.contains("XCT") {
                    problems.append("\(file):\(number + 1): an XCTest name in a Swift Testing contract: \(line)")
                }
                guard line.hasPrefix("    func test") else { continue }
                methods += 1
                if number == 0 || lines[number - 1] != "    @Test(arguments: ContractBackend.selected)" {
                    problems.append("\(file):\(number + 1): no `@Test(arguments: ContractBackend.selected)` above it")
                }
            }
        }
        #expect(methods > 100, "the contract files were not found next to this test")
        #expect(problems == [])
    }
}
