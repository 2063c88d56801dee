import Foundation
import XCTest

import PushStore

/// The shared APNs provider token row: read and compare-and-swap per (team, key).
final class ProviderTokensContract: StoreContract {
    func testSwapStoresTheFirstTokenAndReadsItBack() async throws {
        let store = try await openStore()
        let none = try await store.providerToken(teamID: "T", keyID: "K")
        XCTAssertNil(none)
        let first = ProviderTokenRecord(jwt: "a.b.c", issuedAt: 1_800_000_000)
        let stored = try await store.swapProviderToken(teamID: "T", keyID: "K", expectedJWT: nil, new: first)
        XCTAssertEqual(stored, first)
        let read = try await store.providerToken(teamID: "T", keyID: "K")
        XCTAssertEqual(read, first)
        try await store.close()
    }

    func testSwapAgainstAStaleReadLosesAndReturnsTheWinner() async throws {
        let store = try await openStore()
        let winner = ProviderTokenRecord(jwt: "winner", issuedAt: 100)
        _ = try await store.swapProviderToken(teamID: "T", keyID: "K", expectedJWT: nil, new: winner)
        // Another node read an empty row too and swaps after the winner.
        let late = try await store.swapProviderToken(
            teamID: "T", keyID: "K", expectedJWT: nil, new: ProviderTokenRecord(jwt: "late", issuedAt: 101))
        XCTAssertEqual(late, winner)
        // A refresh that read the winner's token replaces it.
        let next = ProviderTokenRecord(jwt: "next", issuedAt: 3100)
        let refreshed = try await store.swapProviderToken(teamID: "T", keyID: "K", expectedJWT: "winner", new: next)
        XCTAssertEqual(refreshed, next)
        let stale = try await store.swapProviderToken(
            teamID: "T", keyID: "K", expectedJWT: "winner", new: ProviderTokenRecord(jwt: "x", issuedAt: 3101))
        XCTAssertEqual(stale, next)
        let read = try await store.providerToken(teamID: "T", keyID: "K")
        XCTAssertEqual(read, next)
        try await store.close()
    }

    func testTokensAreKeptPerTeamAndKeyAndSurviveReopening() async throws {
        let first = try await openStore()
        _ = try await first.swapProviderToken(
            teamID: "T", keyID: "K1", expectedJWT: nil, new: ProviderTokenRecord(jwt: "k1", issuedAt: 1))
        _ = try await first.swapProviderToken(
            teamID: "T", keyID: "K2", expectedJWT: nil, new: ProviderTokenRecord(jwt: "k2", issuedAt: 2))
        try await first.close()
        let reopened = try await openStore()
        let k1 = try await reopened.providerToken(teamID: "T", keyID: "K1")
        let k2 = try await reopened.providerToken(teamID: "T", keyID: "K2")
        let other = try await reopened.providerToken(teamID: "U", keyID: "K1")
        XCTAssertEqual(k1?.jwt, "k1")
        XCTAssertEqual(k2?.jwt, "k2")
        XCTAssertNil(other)
        try await reopened.close()
    }

    func testConcurrentSwapsFromTheSameReadHaveOneWinner() async throws {
        let store = try await openStore()
        let results = try await withThrowingTaskGroup(of: ProviderTokenRecord.self) { group in
            for n in 0..<16 {
                group.addTask {
                    try await store.swapProviderToken(
                        teamID: "T", keyID: "K", expectedJWT: nil, new: ProviderTokenRecord(jwt: "n\(n)", issuedAt: Int64(n)))
                }
            }
            return try await group.reduce(into: [ProviderTokenRecord]()) { $0.append($1) }
        }
        XCTAssertEqual(Set(results).count, 1, "every caller ends with the one stored token")
        let stored = try await store.providerToken(teamID: "T", keyID: "K")
        XCTAssertEqual(stored, results.first)
        try await store.close()
    }
}
