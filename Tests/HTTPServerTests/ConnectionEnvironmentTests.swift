import XCTest

@testable import HTTPServer

final class ConnectionEnvironmentTests: XCTestCase {
    func testRequestIDsArePrefixDashCounterInLowercaseHex() {
        let env = ConnectionEnvironment(
            router: Router(), limits: HTTPLimits(), serverName: nil,
            requestIDPrefix: "0a1b2c3d4e5f60718", fixedDate: "x")
        for n in 1...5000 {
            XCTAssertEqual(env.nextRequestID(), "0a1b2c3d4e5f60718-" + String(n, radix: 16))
        }
        let short = ConnectionEnvironment(
            router: Router(), limits: HTTPLimits(), serverName: nil,
            requestIDPrefix: "t", fixedDate: "x")
        XCTAssertEqual(short.nextRequestID(), "t-1")
    }
}
