import APNsClient
import Foundation
import TestSupport
import XCTest

/// The process-wide registry: one manager per (team, key), whoever asks (a sandbox pool, a production pool, the
/// broadcast client), so they mint one token between them. No sockets: the managers are driven directly.
final class ProviderTokenManagersTests: XCTestCase {
    private let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
    private let signer = FakeSigner()
    private let store = MemoryTokenStore()

    private func credentials(team: String = "TEAM123456", key: String = "KEY1234567") -> APNsCredentials {
        APNsCredentials(teamID: team, keyID: key, key: signer)
    }

    private func registry() -> ProviderTokenManagers {
        ProviderTokenManagers(store: store, clock: clock.closure)
    }

    func testHandsOutOneManagerPerTeamAndKey() throws {
        let managers = registry()
        let first = try XCTUnwrap(managers.manager(for: credentials()))
        XCTAssertTrue(first === managers.manager(for: credentials()), "a second lookup of the key")
        // Another signer object for the same key (apps sharing a .p8) still gets the same manager.
        let sameKey = APNsCredentials(teamID: "TEAM123456", keyID: "KEY1234567", key: FakeSigner())
        XCTAssertTrue(first === managers.manager(for: sameKey))
        XCTAssertFalse(first === managers.manager(for: credentials(key: "OTHERKEY99")))
        XCTAssertFalse(first === managers.manager(for: credentials(team: "OTHERTEAM9")))
        XCTAssertEqual(managers.count, 3)
    }

    func testSeparateRegistriesKeepSeparateManagers() throws {
        let first = try XCTUnwrap(registry().manager(for: credentials()))
        let second = try XCTUnwrap(registry().manager(for: credentials()))
        XCTAssertFalse(first === second)
    }

    func testSandboxProductionAndBroadcastUsersMintOneToken() async throws {
        let managers = registry()
        // What the sandbox pool, the production pool and the broadcast client each look up.
        let users = try (0..<3).map { _ in try XCTUnwrap(managers.manager(for: credentials())) }
        var tokens: [ProviderTokenState.Token] = []
        for user in users { tokens.append(try await user.currentToken()) }
        XCTAssertEqual(Set(tokens.map(\.jwt)).count, 1)
        XCTAssertEqual(signer.signed, 1)
        XCTAssertEqual(store.swaps, 1)
        XCTAssertEqual(users[0].mintCount, 1)
    }

    func testRefreshAfterExpiryByOneUserIsWhatTheOthersUse() async throws {
        let managers = registry()
        let sandbox = try XCTUnwrap(managers.manager(for: credentials()))
        let production = try XCTUnwrap(managers.manager(for: credentials()))
        let broadcast = try XCTUnwrap(managers.manager(for: credentials()))
        let old = try await sandbox.currentToken()
        let same = try await production.currentToken()
        XCTAssertEqual(same, old)

        clock.advance(minutes: 25)  // past the 20-minute floor: ExpiredProviderToken may be answered with a new token
        let refreshed = try await production.tokenAfterExpiry(generation: old.generation)
        XCTAssertNotEqual(refreshed.jwt, old.jwt)
        // The sandbox pool's next request and a broadcast answered ExpiredProviderToken for the old token both get
        // the refreshed one: nobody signs a third.
        let sandboxNext = try await sandbox.currentToken()
        XCTAssertEqual(sandboxNext, refreshed)
        let broadcastRetry = try await broadcast.tokenAfterExpiry(generation: old.generation)
        XCTAssertEqual(broadcastRetry, refreshed)
        XCTAssertEqual(signer.signed, 2)
        XCTAssertEqual(store.token(teamID: "TEAM123456", keyID: "KEY1234567")?.jwt, refreshed.jwt)
    }

    func testTheRegistrysStoreAndClockAreTheManagersOwn() async throws {
        store.put(
            StoredProviderToken(jwt: "jwt-stored", issuedAt: Int(clock.now.timeIntervalSince1970) - 60),
            teamID: "TEAM123456", keyID: "KEY1234567")
        let manager = try XCTUnwrap(registry().manager(for: credentials()))
        let token = try await manager.currentToken()
        XCTAssertEqual(token.jwt, "jwt-stored", "adopted from the registry's store")
        XCTAssertEqual(signer.signed, 0)
        XCTAssertEqual(manager.adoptCount, 1)
    }
}
