import HTTPClient
import XCTest

/// `HostResolver` with the system resolver on names and numbers that need no network.
final class HostResolverTests: XCTestCase {
    func testEveryNumericIPv4SpellingResolvesToTheAddressItNames() async throws {
        for spelling in ["127.0.0.1", "2130706433", "0x7f000001", "0177.0.0.1", "127.1", "0x7f.1"] {
            let result = await HostResolver.resolve(spelling)
            XCTAssertEqual(try result.get(), [IPAddress(127, 0, 0, 1)], spelling)
        }
    }

    func testIPv6LiteralsAndLocalhostResolveToLoopback() async throws {
        let ipv6 = try await HostResolver.resolve("::1").get()
        XCTAssertEqual(ipv6, [IPAddress("::1")!])
        let mapped = try await HostResolver.resolve("::ffff:127.0.0.1").get()
        XCTAssertEqual(mapped, [IPAddress("::ffff:127.0.0.1")!])
        let localhost = try await HostResolver.resolve("localhost").get()
        XCTAssertFalse(localhost.isEmpty)
        XCTAssertTrue(localhost.allSatisfy { $0 == IPAddress(127, 0, 0, 1) || $0 == IPAddress("::1")! }, "\(localhost)")
    }

    func testANameThatCannotResolveIsAFailureNotAnEmptyList() async {
        // `.invalid` never resolves (RFC 6761); without a resolver in reach it may also time out.
        switch await HostResolver.resolve("nothing-here.invalid", timeout: .seconds(2)) {
        case .success(let addresses): XCTFail("resolved to \(addresses)")
        case .failure: break
        }
    }
}
