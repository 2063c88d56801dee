import XCTest

/// A test case with a fresh push-server binary (`ServerProcess`) started before every test and stopped after it.
class ServerTestCase: XCTestCase {
    /// The server of the running test.
    var server: ServerProcess!

    override func setUp() async throws {
        server = try ServerProcess()
        try server.start()
    }

    override func tearDown() async throws {
        server?.stop()
        server = nil
    }
}
