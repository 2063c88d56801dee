import Foundation
import PushStore
import Testing

/// An instance's keys: stored, listed, rolled in one transaction, revoked, and their last use moved forward only.
final class APIKeysContract: StoreContract {
    func key(_ id: String, at: Date, instance: String? = nil) -> APIKeyRecord {
        APIKeyRecord(
            instanceID: instance ?? self.instance, id: id, kind: .scoped, label: "backend \(id)",
            scopes: ["publish", "publish:read"], secretDigest: String(repeating: "ab", count: 32),
            notBefore: at.addingTimeInterval(-5), expiresAt: nil, createdAt: at)
    }

    @Test(arguments: ContractBackend.selected)
    func testKeysAreStoredPerInstanceAndSurviveReopening(_ backend: ContractBackend) async throws {
        var store = try await openStore(backend)
        let at = Date(millisecondsSince1970: 1_800_000_000_000)
        let first = key("aaaaaaaaaaaa", at: at)
        let sealed = APIKeyRecord(
            instanceID: instance, id: "beams-initial", kind: .beams, label: "Beams secret",
            scopes: [], sealedSecret: "c2VhbGVk", createdAt: at.addingTimeInterval(1))
        #expect(try await store.insertAPIKey(first))
        #expect(try await store.insertAPIKey(sealed))
        #expect(try await store.insertAPIKey(key("bbbbbbbbbbbb", at: at, instance: "other")))
        #expect(
            try await store.insertAPIKey(key("aaaaaaaaaaaa", at: at.addingTimeInterval(9))) == false,
            "a taken id is refused")
        try await store.close()
        store = try await openStore(backend)
        let keys = try await store.apiKeys(instanceID: instance)
        #expect(keys == [first, sealed])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRollRetiresTheOldKeyAndStoresTheReplacementTogether(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let at = Date(millisecondsSince1970: 1_800_000_000_000)
        try await store.insertAPIKey(key("aaaaaaaaaaaa", at: at))
        var replacement = key("cccccccccccc", at: at.addingTimeInterval(60))
        replacement.rotatedFrom = "aaaaaaaaaaaa"
        let retireAt = at.addingTimeInterval(3600)
        #expect(
            try await store.rollAPIKey(
                instanceID: instance, keyID: "aaaaaaaaaaaa", retireAt: retireAt,
                replacement: replacement))
        var keys = try await store.apiKeys(instanceID: instance)
        #expect(keys.map(\.id) == ["aaaaaaaaaaaa", "cccccccccccc"])
        #expect(keys[0].expiresAt == retireAt)
        #expect(keys[1] == replacement)
        // A later roll never extends the old key's life.
        #expect(
            try await store.rollAPIKey(
                instanceID: instance, keyID: "aaaaaaaaaaaa",
                retireAt: retireAt.addingTimeInterval(86_400),
                replacement: key("dddddddddddd", at: at)))
        keys = try await store.apiKeys(instanceID: instance)
        #expect(keys.first { $0.id == "aaaaaaaaaaaa" }?.expiresAt == retireAt)
        // Unknown and revoked keys are not rolled, and nothing is stored for them.
        #expect(
            try await store.rollAPIKey(
                instanceID: instance, keyID: "zzzzzzzzzzzz", retireAt: at,
                replacement: key("eeeeeeeeeeee", at: at)) == false)
        #expect(try await store.revokeAPIKey(instanceID: instance, keyID: "cccccccccccc", at: at))
        #expect(
            try await store.rollAPIKey(
                instanceID: instance, keyID: "cccccccccccc", retireAt: at,
                replacement: key("ffffffffffff", at: at)) == false)
        keys = try await store.apiKeys(instanceID: instance)
        #expect(Set(keys.map(\.id)) == ["aaaaaaaaaaaa", "cccccccccccc", "dddddddddddd"])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRevokeKeepsTheFirstTimeAndUsesOnlyMoveForward(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let at = Date(millisecondsSince1970: 1_800_000_000_000)
        try await store.insertAPIKey(key("aaaaaaaaaaaa", at: at))
        #expect(
            try await store.revokeAPIKey(instanceID: instance, keyID: "aaaaaaaaaaaa", at: at.addingTimeInterval(10)))
        #expect(
            try await store.revokeAPIKey(instanceID: instance, keyID: "aaaaaaaaaaaa", at: at.addingTimeInterval(20)))
        #expect(try await store.revokeAPIKey(instanceID: instance, keyID: "nnnnnnnnnnnn", at: at) == false)
        try await store.recordAPIKeyUses([
            APIKeyUse(instanceID: instance, id: "aaaaaaaaaaaa", at: at.addingTimeInterval(300)),
            APIKeyUse(instanceID: instance, id: "unknown", at: at),
        ])
        try await store.recordAPIKeyUses([
            APIKeyUse(instanceID: instance, id: "aaaaaaaaaaaa", at: at.addingTimeInterval(100))
        ])
        let stored = try await store.apiKeys(instanceID: instance)
        #expect(stored.first?.revokedAt == at.addingTimeInterval(10))
        #expect(stored.first?.lastUsedAt == at.addingTimeInterval(300))
        try await store.close()
    }
}
