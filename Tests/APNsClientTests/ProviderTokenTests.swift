import APNsClient
import Foundation
import JWTSigner
import Locking
import TestSupport
import XCTest

/// Signs with a real ES256 key and counts signatures.
private final class CountingSigner: APNsProviderTokenSigning {
    let key: ES256PrivateKey
    let count = Locked(0)
    let failing: Bool

    init(key: ES256PrivateKey, failing: Bool = false) {
        self.key = key
        self.failing = failing
    }

    func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String {
        count.withLock { $0 += 1 }
        if failing { throw CryptoError(operation: "test", messages: ["refused"]) }
        return try key.providerToken(keyID: keyID, teamID: teamID, issuedAt: issuedAt)
    }
}

final class ProviderTokenStateTests: XCTestCase {
    func testMintsFirstTokenThenReusesItUntilFiftyMinutes() {
        var state = ProviderTokenState()
        XCTAssertEqual(state.token(now: 1000), .mint(issuedAt: 1000))
        let token = state.install(jwt: "a", issuedAt: 1000)
        XCTAssertEqual(state.token(now: 1000 + 49 * 60 + 59), .use(token))
        XCTAssertEqual(state.token(now: 1000 + 50 * 60), .mint(issuedAt: 1000 + 50 * 60))
    }

    func testExpiredResponseForOldGenerationRetriesWithNewerToken() {
        var state = ProviderTokenState()
        state.install(jwt: "a", issuedAt: 0)
        let second = state.install(jwt: "b", issuedAt: 3000)
        XCTAssertEqual(state.expired(generation: 1, now: 3001), .retryWith(second))
    }

    func testExpiredResponseMintsOnlyAfterTwentyMinutes() {
        var state = ProviderTokenState()
        let token = state.install(jwt: "a", issuedAt: 0)
        XCTAssertEqual(
            state.expired(generation: token.generation, now: 19 * 60 + 59), .refuse(ageSeconds: 19 * 60 + 59))
        XCTAssertEqual(state.expired(generation: token.generation, now: 20 * 60), .mint(issuedAt: 20 * 60))
    }

    func testBackwardClockKeepsTheToken() {
        var state = ProviderTokenState()
        let token = state.install(jwt: "a", issuedAt: 10_000)
        XCTAssertEqual(state.token(now: 5_000), .use(token))
    }
}

final class ProviderTokenManagerTests: XCTestCase {
    private var pair: TestKeyPair!
    private var key: ES256PrivateKey!

    override func setUpWithError() throws {
        pair = try TestKeys.makeP256()
        key = try ES256PrivateKey(pem: pair.privateKeyPEM)
    }

    override func tearDown() {
        if let pair { TestKeys.remove(pair) }
    }

    func testOneTokenIsSharedAcrossCallsAndTasksUntilRefreshAge() async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let signer = CountingSigner(key: key)
        let manager = ProviderTokenManager(
            credentials: APNsCredentials(teamID: "TEAM123456", keyID: "KEY1234567", key: signer),
            clock: clock.closure)
        let first = try await manager.currentToken()
        await withTaskGroup(of: ProviderTokenState.Token?.self) { group in
            for _ in 0..<200 { group.addTask { try? await manager.currentToken() } }
            for await token in group { XCTAssertEqual(token, first) }
        }
        clock.advance(minutes: 49)
        let later = try await manager.currentToken()
        XCTAssertEqual(later, first)
        XCTAssertEqual(signer.count.withLock { $0 }, 1)

        clock.advance(minutes: 1)
        XCTAssertNil(manager.readyToken(), "due: only a task may refresh it")
        let second = try await manager.currentToken()
        XCTAssertNotEqual(second.jwt, first.jwt)
        XCTAssertEqual(second.issuedAt, Int(clock.now.timeIntervalSince1970))
        XCTAssertEqual(manager.mintCount, 2)

        // The token is a real ES256 JWT with kid/iss/iat.
        let parts = second.jwt.split(separator: ".")
        XCTAssertEqual(parts.count, 3)
        let header = String(decoding: try Base64URL.decode(parts[0]), as: UTF8.self)
        let claims = String(decoding: try Base64URL.decode(parts[1]), as: UTF8.self)
        XCTAssertTrue(header.contains(#""kid":"KEY1234567""#), header)
        XCTAssertTrue(claims.contains(#""iss":"TEAM123456""#), claims)
        XCTAssertTrue(claims.contains(#""iat":\#(second.issuedAt)"#), claims)
        XCTAssertTrue(
            key.publicKey.verify(
                signature: try Base64URL.decode(parts[2]), message: Array("\(parts[0]).\(parts[1])".utf8)))
    }

    func testTokenNeverReachesSixtyMinutes() async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let manager = ProviderTokenManager(
            credentials: APNsCredentials(teamID: "T", keyID: "K", key: CountingSigner(key: key)), clock: clock.closure)
        for _ in 0..<30 {
            let token = try await manager.currentToken()
            XCTAssertLessThan(Int(clock.now.timeIntervalSince1970) - token.issuedAt, 60 * 60)
            clock.advance(minutes: 7)
        }
    }

    func testExpiredTokenYoungerThanTwentyMinutesIsAConfigurationFaultNotARefresh() async throws {
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let signer = CountingSigner(key: key)
        let manager = ProviderTokenManager(
            credentials: APNsCredentials(teamID: "T", keyID: "K", key: signer), clock: clock.closure)
        let token = try await manager.currentToken()
        clock.advance(minutes: 5)
        do {
            _ = try await manager.tokenAfterExpiry(generation: token.generation)
            XCTFail("refreshed within the floor")
        } catch {
            XCTAssertEqual(error, .configuration(.expiredTokenBeforeRefreshFloor(ageSeconds: 300)))
        }
        XCTAssertEqual(signer.count.withLock { $0 }, 1)

        clock.advance(minutes: 15)
        let refreshed = try await manager.tokenAfterExpiry(generation: token.generation)
        XCTAssertEqual(refreshed.generation, 2)
        // A second request that failed with the old token reuses the refreshed one instead of minting again.
        let again = try await manager.tokenAfterExpiry(generation: token.generation)
        XCTAssertEqual(again, refreshed)
        XCTAssertEqual(signer.count.withLock { $0 }, 2)
    }

    func testSigningFailureIsAConfigurationFault() async {
        let manager = ProviderTokenManager(
            credentials: APNsCredentials(teamID: "T", keyID: "K", key: CountingSigner(key: key, failing: true)))
        do {
            _ = try await manager.currentToken()
            XCTFail("signed with a failing key")
        } catch {
            guard case .configuration(.signingFailed) = error else { return XCTFail("unexpected \(error)") }
        }
    }
}
