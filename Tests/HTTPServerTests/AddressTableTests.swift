import XCTest

@testable import HTTPServer

/// The per-address rules without sockets: what an address is counted as (`PeerAddress.key`), the connection cap
/// per address, and the body budget with its per-address share (`AddressTable`).
final class AddressTableTests: XCTestCase {
    func testIPv4AndItsMappedFormAreOneKeyAndNeighboursAreNot() throws {
        let plain = try XCTUnwrap(PeerAddress("192.0.2.7"))
        let mapped = try XCTUnwrap(PeerAddress("::ffff:192.0.2.7"))
        XCTAssertEqual(plain, mapped)
        XCTAssertEqual(plain.key, mapped.key)
        XCTAssertTrue(plain.isV4)
        XCTAssertNotEqual(plain.key, PeerAddress("192.0.2.8")?.key)
        XCTAssertNotEqual(PeerAddress("127.0.0.1")?.key, PeerAddress("127.0.0.2")?.key)
    }

    func testIPv6AddressesOfOneSlash64ShareAKeyAndTheNextSlash64DoesNot() throws {
        let a = try XCTUnwrap(PeerAddress("2001:db8:1:2::1"))
        let b = try XCTUnwrap(PeerAddress("2001:db8:1:2:ffff:ffff:ffff:ffff"))
        let other = try XCTUnwrap(PeerAddress("2001:db8:1:3::1"))
        XCTAssertNotEqual(a, b)
        XCTAssertEqual(a.key, b.key)
        XCTAssertNotEqual(a.key, other.key)
        XCTAssertFalse(a.isV4)
        XCTAssertEqual(
            PeerAddress(bytes: [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2] + [UInt8](repeating: 0, count: 7) + [1]), a)
    }

    func testTextThatIsNotAnAddressIsNil() {
        XCTAssertNil(PeerAddress("proxy.internal"))
        XCTAssertNil(PeerAddress("10.0.0.1/8"))
        XCTAssertNil(PeerAddress(bytes: [1, 2, 3]))
    }

    func testAnAddressAtItsConnectionCapIsRefusedWhileAnotherIsNot() throws {
        var table = AddressTable(maxConnectionsPerAddress: 2, maxBodyBytes: 1000, maxBodyBytesPerAddress: 500)
        let a = try XCTUnwrap(PeerAddress("127.0.0.1")).key
        let b = try XCTUnwrap(PeerAddress("127.0.0.2")).key
        XCTAssertTrue(table.open(a))
        XCTAssertTrue(table.open(a))
        XCTAssertFalse(table.open(a))
        XCTAssertTrue(table.open(b))
        table.closed(a)
        XCTAssertTrue(table.open(a), "a closed connection frees its place")
    }

    func testZeroMeansNoPerAddressConnectionLimit() throws {
        var table = AddressTable(maxConnectionsPerAddress: 0, maxBodyBytes: 1000, maxBodyBytesPerAddress: 500)
        let a = try XCTUnwrap(PeerAddress("127.0.0.1")).key
        for _ in 0..<10_000 { XCTAssertTrue(table.open(a)) }
    }

    func testAnAddressThatHoldsNothingIsForgotten() throws {
        var table = AddressTable(maxConnectionsPerAddress: 2, maxBodyBytes: 1000, maxBodyBytesPerAddress: 500)
        let a = try XCTUnwrap(PeerAddress("2001:db8::1")).key
        XCTAssertTrue(table.open(a))
        XCTAssertEqual(table.reserveBody(100, for: a), .reserved)
        table.releaseBody(100, for: a)
        table.closed(a)
        XCTAssertTrue(table.entries.isEmpty)
        XCTAssertEqual(table.bodyBytes, 0)
    }

    func testBodiesPastTheServerBudgetOrTheAddressShareAreRefusedAndReleasedBytesCountAgain() throws {
        var table = AddressTable(maxConnectionsPerAddress: 0, maxBodyBytes: 1000, maxBodyBytesPerAddress: 400)
        let a = try XCTUnwrap(PeerAddress("127.0.0.1")).key
        let b = try XCTUnwrap(PeerAddress("127.0.0.2")).key
        let c = try XCTUnwrap(PeerAddress("127.0.0.3")).key
        XCTAssertEqual(table.reserveBody(400, for: a), .reserved)
        XCTAssertEqual(table.reserveBody(1, for: a), .overAddressShare)
        XCTAssertEqual(table.reserveBody(400, for: b), .reserved)
        XCTAssertEqual(table.reserveBody(201, for: c), .overBudget)
        XCTAssertEqual(table.reserveBody(200, for: c), .reserved)
        XCTAssertEqual(table.bodyBytes, 1000)
        XCTAssertEqual(table.reserveBody(0, for: c), .reserved, "a request without a body always passes")
        table.releaseBody(400, for: a)
        XCTAssertEqual(table.reserveBody(300, for: nil), .reserved, "an exempt address has no share, only the budget")
        XCTAssertEqual(table.reserveBody(101, for: nil), .overBudget)
    }
}
