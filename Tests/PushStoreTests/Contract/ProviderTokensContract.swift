import Foundation
import PushStore
import Testing

/// The shared APNs provider token row: read and compare-and-swap per (team, key).
final class ProviderTokensContract: StoreContract {
    @Test(arguments: ContractBackend.selected)
    func testSwapStoresTheFirstTokenAndReadsItBack(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let none = try await store.providerToken(teamID: "T", keyID: "K")
        #expect(none == nil)
        let first = ProviderTokenRecord(jwt: "a.b.c", issuedAt: 1_800_000_000)
        let stored = try await store.swapProviderToken(teamID: "T", keyID: "K", expectedJWT: nil, new: first)
        #expect(stored == first)
        let read = try await store.providerToken(teamID: "T", keyID: "K")
        #expect(read == first)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testSwapAgainstAStaleReadLosesAndReturnsTheWinner(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let winner = ProviderTokenRecord(jwt: "winner", issuedAt: 100)
        _ = try await store.swapProviderToken(teamID: "T", keyID: "K", expectedJWT: nil, new: winner)
        // Another node read an empty row too and swaps after the winner.
        let late = try await store.swapProviderToken(
            teamID: "T", keyID: "K", expectedJWT: nil, new: ProviderTokenRecord(jwt: "late", issuedAt: 101))
        #expect(late == winner)
        // A refresh that read the winner's token replaces it.
        let next = ProviderTokenRecord(jwt: "next", issuedAt: 3100)
        let refreshed = try await store.swapProviderToken(teamID: "T", keyID: "K", expectedJWT: "winner", new: next)
        #expect(refreshed == next)
        let stale = try await store.swapProviderToken(
            teamID: "T", keyID: "K", expectedJWT: "winner", new: ProviderTokenRecord(jwt: "x", issuedAt: 3101))
        #expect(stale == next)
        let read = try await store.providerToken(teamID: "T", keyID: "K")
        #expect(read == next)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testTokensAreKeptPerTeamAndKeyAndSurviveReopening(_ backend: ContractBackend) async throws {
        let first = try await openStore(backend)
        _ = try await first.swapProviderToken(
            teamID: "T", keyID: "K1", expectedJWT: nil, new: ProviderTokenRecord(jwt: "k1", issuedAt: 1))
        _ = try await first.swapProviderToken(
            teamID: "T", keyID: "K2", expectedJWT: nil, new: ProviderTokenRecord(jwt: "k2", issuedAt: 2))
        try await first.close()
        let reopened = try await openStore(backend)
        let k1 = try await reopened.providerToken(teamID: "T", keyID: "K1")
        let k2 = try await reopened.providerToken(teamID: "T", keyID: "K2")
        let other = try await reopened.providerToken(teamID: "U", keyID: "K1")
        #expect(k1?.jwt == "k1")
        #expect(k2?.jwt == "k2")
        #expect(other == nil)
        try await reopened.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testConcurrentSwapsFromTheSameReadHaveOneWinner(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let results = try await withThrowingTaskGroup(of: ProviderTokenRecord.self) { group in
            for n in 0..<16 {
                group.addTask {
                    try await store.swapProviderToken(
                        teamID: "T", keyID: "K", expectedJWT: nil,
                        new: ProviderTokenRecord(jwt: "n\(n)", issuedAt: Int64(n)))
                }
            }
            return try await group.reduce(into: [ProviderTokenRecord]()) { $0.append($1) }
        }
        #expect(Set(results).count == 1, "every caller ends with the one stored token")
        let stored = try await store.providerToken(teamID: "T", keyID: "K")
        #expect(stored == results.first)
        try await store.close()
    }
}
