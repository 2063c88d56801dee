import Foundation
import XCTest

import PushStore

/// An instance's keys: stored, listed, rolled in one transaction, revoked, and their last use moved forward only.
final class APIKeysContract: StoreContract {
    func key(_ id: String, at: Date, instance: String? = nil) -> APIKeyRecord {
        APIKeyRecord(instanceID: instance ?? self.instance, id: id, kind: .scoped, label: "backend \(id)",
                     scopes: ["publish", "publish:read"], secretDigest: String(repeating: "ab", count: 32),
                     notBefore: at.addingTimeInterval(-5), expiresAt: nil, createdAt: at)
    }

    /// XCTAssert's autoclosures cannot await.
    func isTrue(_ value: Bool, _ message: String = "", line: UInt = #line) { XCTAssertTrue(value, message, line: line) }
    func isFalse(_ value: Bool, _ message: String = "", line: UInt = #line) { XCTAssertFalse(value, message, line: line) }

    func testKeysAreStoredPerInstanceAndSurviveReopening() async throws {
        var store = try await openStore()
        let at = Date(millisecondsSince1970: 1_800_000_000_000)
        let first = key("aaaaaaaaaaaa", at: at)
        let sealed = APIKeyRecord(instanceID: instance, id: "beams-initial", kind: .beams, label: "Beams secret",
                                  scopes: [], sealedSecret: "c2VhbGVk", createdAt: at.addingTimeInterval(1))
        isTrue(try await store.insertAPIKey(first))
        isTrue(try await store.insertAPIKey(sealed))
        isTrue(try await store.insertAPIKey(key("bbbbbbbbbbbb", at: at, instance: "other")))
        isFalse(try await store.insertAPIKey(key("aaaaaaaaaaaa", at: at.addingTimeInterval(9))),
                       "a taken id is refused")
        try await store.close()
        store = try await openStore()
        let keys = try await store.apiKeys(instanceID: instance)
        XCTAssertEqual(keys, [first, sealed])
        try await store.close()
    }

    func testRollRetiresTheOldKeyAndStoresTheReplacementTogether() async throws {
        let store = try await openStore()
        let at = Date(millisecondsSince1970: 1_800_000_000_000)
        try await store.insertAPIKey(key("aaaaaaaaaaaa", at: at))
        var replacement = key("cccccccccccc", at: at.addingTimeInterval(60))
        replacement.rotatedFrom = "aaaaaaaaaaaa"
        let retireAt = at.addingTimeInterval(3600)
        isTrue(try await store.rollAPIKey(instanceID: instance, keyID: "aaaaaaaaaaaa", retireAt: retireAt,
                                                 replacement: replacement))
        var keys = try await store.apiKeys(instanceID: instance)
        XCTAssertEqual(keys.map(\.id), ["aaaaaaaaaaaa", "cccccccccccc"])
        XCTAssertEqual(keys[0].expiresAt, retireAt)
        XCTAssertEqual(keys[1], replacement)
        // A later roll never extends the old key's life.
        isTrue(try await store.rollAPIKey(instanceID: instance, keyID: "aaaaaaaaaaaa",
                                                 retireAt: retireAt.addingTimeInterval(86_400),
                                                 replacement: key("dddddddddddd", at: at)))
        keys = try await store.apiKeys(instanceID: instance)
        XCTAssertEqual(keys.first { $0.id == "aaaaaaaaaaaa" }?.expiresAt, retireAt)
        // Unknown and revoked keys are not rolled, and nothing is stored for them.
        isFalse(try await store.rollAPIKey(instanceID: instance, keyID: "zzzzzzzzzzzz", retireAt: at,
                                                  replacement: key("eeeeeeeeeeee", at: at)))
        isTrue(try await store.revokeAPIKey(instanceID: instance, keyID: "cccccccccccc", at: at))
        isFalse(try await store.rollAPIKey(instanceID: instance, keyID: "cccccccccccc", retireAt: at,
                                                  replacement: key("ffffffffffff", at: at)))
        keys = try await store.apiKeys(instanceID: instance)
        XCTAssertEqual(Set(keys.map(\.id)), ["aaaaaaaaaaaa", "cccccccccccc", "dddddddddddd"])
        try await store.close()
    }

    func testRevokeKeepsTheFirstTimeAndUsesOnlyMoveForward() async throws {
        let store = try await openStore()
        let at = Date(millisecondsSince1970: 1_800_000_000_000)
        try await store.insertAPIKey(key("aaaaaaaaaaaa", at: at))
        isTrue(try await store.revokeAPIKey(instanceID: instance, keyID: "aaaaaaaaaaaa", at: at.addingTimeInterval(10)))
        isTrue(try await store.revokeAPIKey(instanceID: instance, keyID: "aaaaaaaaaaaa", at: at.addingTimeInterval(20)))
        isFalse(try await store.revokeAPIKey(instanceID: instance, keyID: "nnnnnnnnnnnn", at: at))
        try await store.recordAPIKeyUses([APIKeyUse(instanceID: instance, id: "aaaaaaaaaaaa", at: at.addingTimeInterval(300)),
                                          APIKeyUse(instanceID: instance, id: "unknown", at: at)])
        try await store.recordAPIKeyUses([APIKeyUse(instanceID: instance, id: "aaaaaaaaaaaa", at: at.addingTimeInterval(100))])
        let stored = try await store.apiKeys(instanceID: instance)
        XCTAssertEqual(stored.first?.revokedAt, at.addingTimeInterval(10))
        XCTAssertEqual(stored.first?.lastUsedAt, at.addingTimeInterval(300))
        try await store.close()
    }
}
