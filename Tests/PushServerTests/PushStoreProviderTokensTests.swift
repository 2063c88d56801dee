import APNsClient
import Foundation
import Locking
import PushServer
import PushStore
import SQLiteStore
import TestSupport
import XCTest

/// Two "nodes" (two token managers) on one SQLite store: two server processes on one SQLite file are not a
/// supported deployment, so the compare-and-swap that lets only one of them sign per refresh period is checked here.
final class PushStoreProviderTokensTests: XCTestCase {
    /// Signs distinct fake JWTs and counts them.
    private final class CountingSigner: APNsProviderTokenSigning {
        let count = Locked(0)
        func providerToken(keyID: String, teamID: String, issuedAt: Int) throws -> String {
            "jwt-\(issuedAt)-\(count.withLock { count -> Int in count += 1; return count })"
        }
    }

    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokens-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    func testTwoNodesOnOneStoreSignOneTokenPerRefreshPeriodAndUseTheSameOne() async throws {
        let store = try await SQLitePushStore.open(.init(path: directory.appendingPathComponent("p.sqlite").path))
        let tokens = PushStoreProviderTokens(store: store)
        let signer = CountingSigner()
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let credentials = APNsCredentials(teamID: "TEAM123456", keyID: "KEY1234567", key: signer)
        let nodes = (0..<2).map { _ in
            ProviderTokenManager(credentials: credentials, store: tokens, clock: clock.closure)
        }
        let seen = Locked(Set<String>())
        for period in 0..<3 {
            seen.withLock { $0 = [] }
            await withTaskGroup(of: Void.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        if let token = try? await nodes[index % 2].currentToken() {
                            seen.withLock { _ = $0.insert(token.jwt) }
                        }
                    }
                }
            }
            XCTAssertEqual(seen.withLock { $0.count }, 1, "period \(period): both nodes use one token")
            // One token per period goes into use; a node that loses the swap drops the token it signed unused.
            XCTAssertEqual(nodes[0].mintCount + nodes[1].mintCount, period + 1, "period \(period): one winner")
            XCTAssertLessThanOrEqual(signer.count.withLock { $0 }, 2 * (period + 1))
            let stored = try await store.providerToken(teamID: "TEAM123456", keyID: "KEY1234567")
            XCTAssertEqual(stored.map { Set([$0.jwt]) }, seen.withLock { $0 })
            clock.advance(minutes: 50)
        }
        XCTAssertEqual(nodes[0].adoptCount + nodes[1].adoptCount, 3, "the other node adopted each period's token")
        try await store.close()
    }

    func testRestartedServerAdoptsTheTokenItsPredecessorStored() async throws {
        let path = directory.appendingPathComponent("p.sqlite").path
        let signer = CountingSigner()
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let credentials = APNsCredentials(teamID: "TEAM123456", keyID: "KEY1234567", key: signer)
        let first = try await SQLitePushStore.open(.init(path: path))
        let firstManager = ProviderTokenManager(
            credentials: credentials, store: PushStoreProviderTokens(store: first), clock: clock.closure)
        let before = try? await firstManager.currentToken().jwt
        try await first.close()

        clock.advance(minutes: 5)
        let second = try await SQLitePushStore.open(.init(path: path))
        let secondManager = ProviderTokenManager(
            credentials: credentials, store: PushStoreProviderTokens(store: second), clock: clock.closure)
        let after = try? await secondManager.currentToken().jwt
        XCTAssertNotNil(before)
        XCTAssertEqual(after, before)
        XCTAssertEqual(signer.count.withLock { $0 }, 1)
        try await second.close()
    }

    /// A store that never answers (held until the test ends).
    private final class SilentStore: ProviderTokenStorage {
        let open = WaitableState(false)
        func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord? {
            await open.waitIgnoringCancellation { $0 }
            return nil
        }
        func swapProviderToken(
            teamID: String, keyID: String, expectedJWT: String?, new: ProviderTokenRecord
        ) async throws -> ProviderTokenRecord {
            await open.waitIgnoringCancellation { $0 }
            return new
        }
    }

    func testAStoreThatDoesNotAnswerFailsTheCallAfterTheTimeout() async throws {
        let silent = SilentStore()
        defer { silent.open.update { $0 = true } }
        let tokens = PushStoreProviderTokens(store: silent, timeout: .milliseconds(50))
        do {
            _ = try await tokens.load(teamID: "TEAM123456", keyID: "KEY1234567")
            XCTFail("answered without a store")
        } catch {
            XCTAssertTrue(error is PushStoreProviderTokens.TimedOut, "\(error)")
        }
    }
}
