import ConfigModel
import Foundation
import InMemoryStore
import JWTSigner
import Locking
import PushStore
import TestSupport
import XCTest

@testable import PushServer

/// Scoped keys and Beams-secret rotation without sockets: key text, the verdict on a presented key, which Beams
/// secrets are accepted during a roll's overlap, and `KeyRing` over the in-memory store with a test clock.
final class APIKeyTests: XCTestCase {
    let instance = InstanceConfig(
        id: "8d2b7a3c-0f4e-4a51-9b6d-2c1e3f4a5b6c", secretKey: String(repeating: "s", count: 40),
        apns: nil, webhook: nil)
    let at = Date(timeIntervalSince1970: 1_800_000_000)

    // MARK: Key text

    func testGeneratedKeyParsesBackToItsIDAndSecret() throws {
        let key = try ScopedKeyText.generate()
        XCTAssertTrue(key.text.hasPrefix("psk_"))
        XCTAssertEqual(key.text.count, 4 + 12 + 1 + 43)
        XCTAssertEqual(ScopedKeyText.parse(key.text), key)
        XCTAssertNotEqual(try ScopedKeyText.generate(), key)
        XCTAssertEqual(try key.digest.count, 64)
    }

    func testMalformedKeyTextIsNotParsed() throws {
        let key = try ScopedKeyText.generate().text
        XCTAssertNil(ScopedKeyText.parse(String(key.dropLast())), "short secret")
        XCTAssertNil(ScopedKeyText.parse(key + "A"), "long secret")
        XCTAssertNil(ScopedKeyText.parse("psk_ABCDEFGHIJKL_" + String(key.suffix(43))), "upper-case id")
        XCTAssertNil(ScopedKeyText.parse("psk_abcdefghijkl-" + String(key.suffix(43))), "no separator")
        XCTAssertNil(ScopedKeyText.parse("psk_abcdefghijkl_" + String(repeating: "+", count: 43)), "not base62")
        XCTAssertNil(ScopedKeyText.parse("rk__" + key.dropFirst(4)), "another prefix")
    }

    // MARK: Verdict

    func scoped(
        _ text: ScopedKeyText, scopes: [APIKeyScope], notBefore: Date? = nil, expiresAt: Date? = nil,
        revokedAt: Date? = nil
    ) throws -> APIKeyRecord {
        APIKeyRecord(
            instanceID: instance.id, id: text.id, kind: .scoped, label: "test", scopes: scopes.map(\.rawValue),
            secretDigest: try text.digest, notBefore: notBefore, expiresAt: expiresAt, createdAt: at,
            revokedAt: revokedAt)
    }

    func judge(
        _ presented: String, _ scope: APIKeyScope, _ keys: [APIKeyRecord],
        beamsScopes: Set<APIKeyScope> = APIKeyScope.all, now: Date? = nil
    ) -> KeyVerdict {
        KeyVerdict.judge(
            presented, required: scope, keys: keys,
            beamsSecrets: [AcceptedBeamsSecret(keyID: nil, secret: instance.secretKey)],
            beamsScopes: beamsScopes, now: now ?? at)
    }

    func testKeyWithTheScopeIsAllowedAndOneWithoutGetsTheMissingScope() throws {
        let text = try ScopedKeyText.generate()
        let keys = [try scoped(text, scopes: [.publish])]
        XCTAssertEqual(
            judge(text.text, .publish, keys),
            .allowed(Credential(keyID: text.id, isBeamsSecret: false, scopes: [.publish])))
        XCTAssertEqual(judge(text.text, .publishRead, keys), .missingScope(.publishRead))
        XCTAssertEqual(judge(text.text, .customer, keys), .missingScope(.customer))
    }

    func testWrongSecretUnknownIDAndNonKeysAreUnknown() throws {
        let text = try ScopedKeyText.generate()
        let keys = [try scoped(text, scopes: APIKeyScope.allCases)]
        let other = try ScopedKeyText.generate()
        XCTAssertEqual(judge(ScopedKeyText(id: text.id, secret: other.secret).text, .publish, keys), .unknown)
        XCTAssertEqual(judge(other.text, .publish, keys), .unknown)
        XCTAssertEqual(judge("psk_garbage", .publish, keys), .unknown)
        XCTAssertEqual(judge("not the secret", .publish, keys), .unknown)
        // The digest is never a key: presenting it as the secret part does not match.
        XCTAssertEqual(judge("psk_\(text.id)_\(String(try text.digest.prefix(43)))", .publish, keys), .unknown)
    }

    func testExpiryNotBeforeAndRevocationAreJudgedAfterTheSecretMatched() throws {
        let text = try ScopedKeyText.generate()
        let expiring = [try scoped(text, scopes: [.publish], expiresAt: at.addingTimeInterval(60))]
        XCTAssertEqual(
            judge(text.text, .publish, expiring, now: at.addingTimeInterval(59.9)),
            .allowed(Credential(keyID: text.id, isBeamsSecret: false, scopes: [.publish])))
        XCTAssertEqual(judge(text.text, .publish, expiring, now: at.addingTimeInterval(60)), .expired)
        let later = [try scoped(text, scopes: [.publish], notBefore: at.addingTimeInterval(10))]
        XCTAssertEqual(judge(text.text, .publish, later, now: at), .notYetValid)
        XCTAssertEqual(
            judge(text.text, .publish, later, now: at.addingTimeInterval(10)),
            .allowed(Credential(keyID: text.id, isBeamsSecret: false, scopes: [.publish])))
        let revoked = [try scoped(text, scopes: [.publish], revokedAt: at)]
        XCTAssertEqual(judge(text.text, .publish, revoked), .revoked)
        // A wrong secret for an expired key says nothing about the key.
        XCTAssertEqual(
            judge(
                ScopedKeyText(id: text.id, secret: String(repeating: "A", count: 43)).text, .publish,
                expiring, now: at.addingTimeInterval(120)), .unknown)
    }

    func testBeamsSecretHoldsEveryScopeUnlessNarrowed() {
        XCTAssertEqual(
            judge(instance.secretKey, .instanceAdmin, []),
            .allowed(Credential(keyID: nil, isBeamsSecret: true, scopes: APIKeyScope.all)))
        let narrowed = APIKeyScope.all.subtracting([.instanceAdmin])
        XCTAssertEqual(
            judge(instance.secretKey, .instanceAdmin, [], beamsScopes: narrowed), .missingScope(.instanceAdmin))
        XCTAssertEqual(
            judge(instance.secretKey, .publish, [], beamsScopes: narrowed),
            .allowed(Credential(keyID: nil, isBeamsSecret: true, scopes: narrowed)))
    }

    func testConfigSecretThatLooksLikeAScopedKeyStillAuthenticates() throws {
        let lookalike = "psk_abcdefghijkl_" + String(repeating: "Z", count: 43)
        let verdict = KeyVerdict.judge(
            lookalike, required: .publish, keys: [],
            beamsSecrets: [AcceptedBeamsSecret(keyID: nil, secret: lookalike)],
            beamsScopes: APIKeyScope.all, now: at)
        XCTAssertEqual(verdict, .allowed(Credential(keyID: nil, isBeamsSecret: true, scopes: APIKeyScope.all)))
    }

    // MARK: Rotation window

    func beamsRow(_ id: String, created: Double, expires: Double? = nil, revoked: Bool = false) -> APIKeyRecord {
        APIKeyRecord(
            instanceID: instance.id, id: id, kind: .beams, label: "b", scopes: [],
            expiresAt: expires.map { at.addingTimeInterval($0) }, createdAt: at.addingTimeInterval(created),
            revokedAt: revoked ? at : nil)
    }

    func testConfigSecretIsAcceptedUntilTheFirstRollThenOnlyStoredOnes() {
        XCTAssertEqual(
            BeamsSecrets.accepted(config: "config", stored: [], anyStored: false, now: at),
            [AcceptedBeamsSecret(keyID: nil, secret: "config")])
        XCTAssertEqual(
            BeamsSecrets.accepted(config: "config", stored: [], anyStored: true, now: at), [],
            "a stored row that did not open does not bring the config secret back")
    }

    func testRolledSecretIsCurrentAndTheOldOneAcceptedUntilItsExpiry() {
        let stored = [
            (beamsRow("beams-initial", created: 0, expires: 3600), "old"),
            (beamsRow("beams-new", created: 1), "new"),
        ]
        let during = BeamsSecrets.accepted(
            config: "config", stored: stored, anyStored: true, now: at.addingTimeInterval(3599))
        XCTAssertEqual(
            during,
            [
                AcceptedBeamsSecret(keyID: "beams-new", secret: "new"),
                AcceptedBeamsSecret(keyID: "beams-initial", secret: "old"),
            ])
        let after = BeamsSecrets.accepted(
            config: "config", stored: stored, anyStored: true, now: at.addingTimeInterval(3600))
        XCTAssertEqual(after, [AcceptedBeamsSecret(keyID: "beams-new", secret: "new")])
    }

    func testOverlapDurationsParse() {
        XCTAssertEqual(RollOverlap.seconds("now"), 0)
        XCTAssertEqual(RollOverlap.seconds("1h"), 3600)
        XCTAssertEqual(RollOverlap.seconds("24h"), 86_400)
        XCTAssertEqual(RollOverlap.seconds("7d"), 604_800)
        XCTAssertEqual(RollOverlap.seconds("90s"), 90)
        XCTAssertEqual(RollOverlap.seconds("30"), 30)
        XCTAssertNil(RollOverlap.seconds("31d"))
        XCTAssertNil(RollOverlap.seconds("-1h"))
        XCTAssertNil(RollOverlap.seconds("h"))
        XCTAssertNil(RollOverlap.seconds("1w"))
    }

    // MARK: KeyRing over a store

    let tester = AuditActor(actor: "cli:tester", source: "cli", requestID: "cli-run-1")

    func ring(_ store: InMemoryPushStore, _ clock: TestClock, encryptionKey: String? = "kek for tests") -> KeyRing {
        KeyRing(
            store: store, seal: encryptionKey.map { try! SecretSeal(deriving: $0) }, logger: .disabled,
            now: { clock.now }, freshness: .zero)
    }

    func testRolledScopedKeyWorksUntilItsOverlapEnds() async throws {
        let clock = TestClock(at)
        let keys = ring(InMemoryPushStore(clock: { clock.now }), clock)
        let created = try await keys.create(
            instance, label: "backend", scopes: [.publish], notBefore: nil, expiresAt: nil,
            by: tester)
        let (rolled, retiredAt) = try await keys.roll(instance, keyID: created.record.id, overlap: 3600, by: tester)
        XCTAssertEqual(retiredAt, clock.now.addingTimeInterval(3600))
        XCTAssertEqual(rolled.record.rotatedFrom, created.record.id)
        XCTAssertEqual(rolled.record.scopes, ["publish"])
        func verdict(_ text: String) async throws -> KeyVerdict {
            let snapshot = try await keys.snapshot(instance)
            return KeyVerdict.judge(
                text, required: .publish, keys: snapshot.keys, beamsSecrets: snapshot.beamsSecrets,
                beamsScopes: APIKeyScope.all, now: clock.now)
        }
        guard case .allowed = try await verdict(created.text) else {
            return XCTFail("old key refused during the overlap")
        }
        guard case .allowed = try await verdict(rolled.text) else { return XCTFail("new key refused") }
        clock.advance(3600)
        let old = try await verdict(created.text)
        XCTAssertEqual(old, .expired)
        guard case .allowed = try await verdict(rolled.text) else {
            return XCTFail("new key refused after the overlap")
        }
        do {
            _ = try await keys.roll(instance, keyID: created.record.id, overlap: 60, by: tester)
            XCTFail("an expired key was rolled back to life")
        } catch {
            XCTAssertEqual(error, .keyNotFound)
        }
        let listed = try await keys.list(instance).keys
        XCTAssertTrue(listed.allSatisfy { $0.secretDigest?.count == 64 && $0.sealedSecret == nil })
    }

    func testRollingTheBeamsSecretKeepsTheOldOneForTheOverlapAndSealsBoth() async throws {
        let clock = TestClock(at)
        let store = InMemoryPushStore(clock: { clock.now })
        let keys = ring(store, clock)
        let (issued, _) = try await keys.rollBeamsSecret(instance, overlap: 86_400, by: tester)
        XCTAssertGreaterThanOrEqual(issued.text.utf8.count, 32)
        var accepted = try await keys.beamsSecrets(instance).map(\.secret)
        XCTAssertEqual(accepted, [issued.text, instance.secretKey], "the new secret signs, the old one still verifies")
        let rows = try await store.apiKeys(instanceID: instance.id)
        XCTAssertEqual(rows.count, 2)
        for row in rows {
            let sealed = try XCTUnwrap(row.sealedSecret)
            XCTAssertFalse(
                sealed.contains(issued.text) || sealed.contains(instance.secretKey), "stored sealed, not plain")
        }
        clock.advance(86_400)
        accepted = try await keys.beamsSecrets(instance).map(\.secret)
        XCTAssertEqual(accepted, [issued.text])
        // Another node with another key-encryption key cannot use the stored secrets (and says so in its log).
        let wrongKey = ring(store, clock, encryptionKey: "another kek")
        let none = try await wrongKey.beamsSecrets(instance)
        XCTAssertEqual(none, [])
    }

    func testBeamsSecretRollNeedsAnEncryptionKeyAndTheCurrentOneCannotBeRevoked() async throws {
        let clock = TestClock(at)
        let store = InMemoryPushStore(clock: { clock.now })
        do {
            _ = try await ring(store, clock, encryptionKey: nil).rollBeamsSecret(instance, overlap: 60, by: tester)
            XCTFail("rolled without a key-encryption key")
        } catch {
            XCTAssertEqual(error, .noEncryptionKey)
        }
        let keys = ring(store, clock)
        let (issued, _) = try await keys.rollBeamsSecret(instance, overlap: 60, by: tester)
        do {
            _ = try await keys.revoke(instance, keyID: issued.record.id, by: tester)
            XCTFail("revoked the current Beams secret")
        } catch {
            XCTAssertEqual(error, .currentBeamsSecret)
        }
        // Revoking the old one ends the overlap early.
        _ = try await keys.revoke(instance, keyID: "beams-initial", by: tester)
        let accepted = try await keys.beamsSecrets(instance).map(\.secret)
        XCTAssertEqual(accepted, [issued.text])
    }

    func testEveryKeyChangeIsAuditedOnceWithItsActorAndARefusedOneNotAtAll() async throws {
        let clock = TestClock(at)
        let store = InMemoryPushStore(clock: { clock.now })
        let keys = ring(store, clock)
        let created = try await keys.create(
            instance, label: "backend", scopes: [.publish], notBefore: nil,
            expiresAt: nil, by: tester)
        let (rolled, _) = try await keys.roll(instance, keyID: created.record.id, overlap: 60, by: tester)
        _ = try await keys.revoke(instance, keyID: rolled.record.id, by: tester)
        _ = try await keys.rollBeamsSecret(instance, overlap: 60, by: tester)
        do {
            _ = try await keys.revoke(instance, keyID: "psk-none", by: tester)
            XCTFail("revoked a key that does not exist")
        } catch {
            XCTAssertEqual(error, .keyNotFound)
        }
        let entries = try await store.auditEntries(instanceID: instance.id, after: 0, limit: 100)
        XCTAssertEqual(entries.map(\.action), ["key.create", "key.roll", "key.revoke", "beams_secret.roll"])
        XCTAssertEqual(
            entries.map(\.target), [created.record.id, created.record.id, rolled.record.id, "beams-initial"])
        XCTAssertTrue(
            entries.allSatisfy { $0.actor == "cli:tester" && $0.source == "cli" && $0.requestID == "cli-run-1" })
        XCTAssertEqual(entries.map(\.seq), [1, 2, 3, 4])
    }

    func testAnOlderReadFinishingLastDoesNotHideAKeyCreatedMeanwhile() async throws {
        let clock = TestClock(at)
        let store = GatedKeyStore(InMemoryPushStore(clock: { clock.now }))
        let keys = KeyRing(
            store: store, seal: try SecretSeal(deriving: "kek for tests"), logger: .disabled, now: { clock.now },
            freshness: .seconds(60))
        // A read that began before the key existed (the server's start-up read), held until after the creation's.
        store.holdNextRead()
        let early = Task { [keys, instance] in try await keys.reload(instance) }
        try await eventually("the early read is held") { store.holding }
        let created = try await keys.create(
            instance, label: "backend", scopes: [.publish], notBefore: nil, expiresAt: nil, by: tester)
        store.release()
        let returned = try await early.value
        XCTAssertTrue(returned.keys.contains { $0.id == created.record.id }, "the later read is kept and returned")
        let snapshot = try await keys.snapshot(instance)
        let verdict = KeyVerdict.judge(
            created.text, required: .publish, keys: snapshot.keys, beamsSecrets: snapshot.beamsSecrets,
            beamsScopes: APIKeyScope.all, now: clock.now)
        guard case .allowed = verdict else { return XCTFail("the new key is refused: \(verdict)") }
    }
}

/// An `APIKeyStore` whose next `apiKeys` read waits until `release()`, to order two overlapping reads.
private final class GatedKeyStore: APIKeyStore, @unchecked Sendable {
    private let base: InMemoryPushStore
    private let gate = WaitableState(Gate())
    private struct Gate: Sendable {
        var holdNext = false
        var holding = false
        var released = false
    }

    init(_ base: InMemoryPushStore) { self.base = base }

    func holdNextRead() { gate.update { $0.holdNext = true } }
    var holding: Bool { gate.read { $0.holding } }
    func release() { gate.update { $0.released = true } }

    func apiKeys(instanceID: String) async throws -> [APIKeyRecord] {
        let hold = gate.update { gate -> Bool in
            defer { gate.holdNext = false }
            return gate.holdNext
        }
        // Read first, then wait: the rows are those of before the creation, returned after it.
        let rows = try await base.apiKeys(instanceID: instanceID)
        if hold {
            gate.update { $0.holding = true }
            await gate.wait(until: { $0.released })
        }
        return rows
    }
    func insertAPIKey(_ key: APIKeyRecord, audit: AuditEntry?) async throws -> Bool {
        try await base.insertAPIKey(key, audit: audit)
    }
    func rollAPIKey(
        instanceID: String, keyID: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry?
    ) async throws -> Bool {
        try await base.rollAPIKey(
            instanceID: instanceID, keyID: keyID, retireAt: retireAt, replacement: replacement, audit: audit)
    }
    func revokeAPIKey(instanceID: String, keyID: String, at: Date, audit: AuditEntry?) async throws -> Bool {
        try await base.revokeAPIKey(instanceID: instanceID, keyID: keyID, at: at, audit: audit)
    }
    func recordAPIKeyUses(_ uses: [APIKeyUse]) async throws { try await base.recordAPIKeyUses(uses) }
}
