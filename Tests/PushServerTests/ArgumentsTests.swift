import PushServer
import XCTest

final class ArgumentsTests: XCTestCase {
    func testParsesOptionsFlagsAndPositionals() throws {
        let args = try Arguments(["--config", "a.json", "--user=bob", "--help", "file", "--", "--literal"])
        XCTAssertEqual(args["config"], "a.json")
        XCTAssertEqual(args["user"], "bob")
        XCTAssertTrue(args.has("help"))
        XCTAssertEqual(args.positionals, ["file", "--literal"])
    }

    func testRejectsMissingValuesRepeatsAndUnknownOptions() {
        XCTAssertThrowsError(try Arguments(["--config"])) {
            XCTAssertEqual($0 as? UsageError, UsageError("--config needs a value"))
        }
        XCTAssertThrowsError(try Arguments(["--a", "1", "--a", "2"])) {
            XCTAssertEqual($0 as? UsageError, UsageError("--a given twice"))
        }
        XCTAssertThrowsError(try Arguments(["--typo", "1"]).allowOnly(["config"])) {
            XCTAssertEqual($0 as? UsageError, UsageError("unknown option --typo"))
        }
    }

    func testCheckConfigExitsTwoAndNamesTheField() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).json")
        try Data(#"{"listen":{"port":-1},"instances":[]}"#.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let status = await CLI.run(["check-config", file.path])
        XCTAssertEqual(status, 2)
        let example = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../config.example.json"
        ).path
        let ok = await CLI.run(["check-config", example])
        XCTAssertEqual(ok, 0)
        let unknown = await CLI.run(["frobnicate"])
        XCTAssertEqual(unknown, 2)
    }
}
