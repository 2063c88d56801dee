import ConfigModel
import Foundation
import JWTSigner
import PushStore

/// Creating, rolling and revoking keys: what the keys API (`KeysAPI`) and `push-server keys` do. Each change is
/// one store call (a roll is one transaction) and refreshes this node's snapshot; other nodes see it within
/// `freshness`.
extension KeyRing {
    /// Why a change was refused.
    package enum ChangeError: Error, Sendable, Equatable {
        case keyNotFound
        /// The current Beams secret cannot be revoked (roll it instead).
        case currentBeamsSecret
        /// `keys.encryptionKey` is not configured, so a Beams secret cannot be stored.
        case noEncryptionKey
        case unavailable(String)
        case crypto(String)
    }

    /// A new key and the only copy of its text.
    package struct Issued: Sendable {
        package var record: APIKeyRecord
        /// `psk_…` for a scoped key, the raw secret for a Beams secret.
        package var text: String
    }

    /// Creates a scoped key; `by` is recorded in the audit log (`key.create`) in the same transaction.
    package func create(
        _ instance: InstanceConfig, label: String, scopes: Set<APIKeyScope>, notBefore: Date?, expiresAt: Date?,
        by actor: AuditActor
    ) async throws(ChangeError) -> Issued {
        let issued = try scoped(
            instance, label: label, scopes: scopes, notBefore: notBefore, expiresAt: expiresAt,
            rotatedFrom: nil)
        do {
            let audit = actor.entry(instance.id, "key.create", issued.record.id, at: now())
            guard try await store.insertAPIKey(issued.record, audit: audit) else {
                throw ChangeError.crypto("key id collision")
            }
        } catch let error as ChangeError {
            throw error
        } catch {
            throw .unavailable("\(error)")
        }
        try await refresh(instance)
        return issued
    }

    /// Rolls a scoped key or a stored Beams secret: a new one with the same label and scopes; the old one keeps
    /// working for `overlap` seconds (0: stops now). Audited as `key.roll` (or `beams_secret.roll`) on the old id.
    package func roll(_ instance: InstanceConfig, keyID: String, overlap: TimeInterval, by actor: AuditActor)
        async throws(ChangeError) -> (issued: Issued, retiredAt: Date)
    {
        let rows = try await rows(instance)
        // An expired key stays dead: rolling it would bring its rights back.
        let at = now()
        guard
            let old = rows.first(where: {
                $0.id == keyID && $0.revokedAt == nil && ($0.expiresAt.map { at < $0 } ?? true)
            })
        else { throw .keyNotFound }
        if old.kind == .beams { return try await rollBeamsSecret(instance, overlap: overlap, by: actor) }
        let issued = try scoped(
            instance, label: old.label, scopes: Set(old.scopes.compactMap(APIKeyScope.init)),
            notBefore: nil, expiresAt: nil, rotatedFrom: old.id)
        let retireAt = now().addingTimeInterval(overlap)
        try await roll(
            instance, old: old.id, retireAt: retireAt, replacement: issued.record,
            audit: actor.entry(instance.id, "key.roll", old.id, at: now()))
        return (issued, min(old.expiresAt ?? retireAt, retireAt))
    }

    /// Rolls the instance's Beams secret: a new random secret becomes current (new user tokens are signed with
    /// it); the old one stays accepted, for `Authorization: Bearer` and for user-token signatures, for `overlap`
    /// seconds. The first roll stores the config file's secret as the old one, so from then on the store holds the
    /// instance's Beams secret and the file's `secretKey` is only where it started.
    package func rollBeamsSecret(_ instance: InstanceConfig, overlap: TimeInterval, by actor: AuditActor)
        async throws(ChangeError) -> (issued: Issued, retiredAt: Date)
    {
        guard seal != nil else { throw .noEncryptionKey }
        var rows = try await rows(instance).filter { $0.kind == .beams }
        if rows.isEmpty {
            let initial = try beams(
                instance, id: "beams-initial", secret: instance.secretKey,
                label: "Beams secret from the config file", rotatedFrom: nil)
            do { try await store.insertAPIKey(initial) } catch { throw .unavailable("\(error)") }
            rows = try await self.rows(instance).filter { $0.kind == .beams }
        }
        let snapshot = try await refresh(instance)
        // The current secret is the first accepted one; a current one that no longer opens is still rolled.
        guard
            let currentID = snapshot.beamsSecrets.first?.keyID
                ?? rows.filter({ $0.revokedAt == nil && $0.expiresAt == nil }).last?.id
        else { throw .keyNotFound }
        let secret: String
        do { secret = try ScopedKeyText.randomText(48, ScopedKeyText.secretAlphabet) } catch {
            throw .crypto("\(error)")
        }
        let id: String
        do { id = "beams-" + (try ScopedKeyText.randomText(12, ScopedKeyText.idAlphabet)) } catch {
            throw .crypto("\(error)")
        }
        let record = try beams(instance, id: id, secret: secret, label: "Beams secret", rotatedFrom: currentID)
        let retireAt = now().addingTimeInterval(overlap)
        try await roll(
            instance, old: currentID, retireAt: retireAt, replacement: record,
            audit: actor.entry(instance.id, "beams_secret.roll", currentID, at: now()))
        return (Issued(record: record, text: secret), retireAt)
    }

    /// Revokes a key at once. A Beams secret can be revoked only while it is not the current one (ending a roll's
    /// overlap early).
    package func revoke(_ instance: InstanceConfig, keyID: String, by actor: AuditActor) async throws(ChangeError)
        -> APIKeyRecord
    {
        let snapshot = try await refresh(instance)
        guard let key = snapshot.keys.first(where: { $0.id == keyID }) else { throw .keyNotFound }
        if key.kind == .beams, snapshot.beamsSecrets.first?.keyID == keyID { throw .currentBeamsSecret }
        do {
            let audit = actor.entry(instance.id, "key.revoke", keyID, at: now())
            guard try await store.revokeAPIKey(instanceID: instance.id, keyID: keyID, at: now(), audit: audit) else {
                throw ChangeError.keyNotFound
            }
        } catch let error as ChangeError {
            throw error
        } catch {
            throw .unavailable("\(error)")
        }
        let after = try await refresh(instance)
        return after.keys.first { $0.id == keyID } ?? key
    }

    /// The instance's keys read from the store now (for listing), whether its Beams secret is still the config
    /// file's, and the id of the current stored Beams secret.
    package func list(_ instance: InstanceConfig) async throws(ChangeError)
        -> (keys: [APIKeyRecord], beamsFromConfig: Bool, currentBeamsID: String?)
    {
        let snapshot = try await refresh(instance)
        let current = snapshot.beamsSecrets.first?.keyID
        return (snapshot.keys, current == nil && !snapshot.beamsSecrets.isEmpty, current)
    }

    // MARK: Helpers

    private func rows(_ instance: InstanceConfig) async throws(ChangeError) -> [APIKeyRecord] {
        try await refresh(instance).keys
    }

    @discardableResult
    private func refresh(_ instance: InstanceConfig) async throws(ChangeError) -> Snapshot {
        do { return try await reload(instance) } catch { throw .unavailable(error.underlying) }
    }

    private func roll(
        _ instance: InstanceConfig, old: String, retireAt: Date, replacement: APIKeyRecord, audit: AuditEntry
    ) async throws(ChangeError) {
        do {
            guard
                try await store.rollAPIKey(
                    instanceID: instance.id, keyID: old, retireAt: retireAt,
                    replacement: replacement, audit: audit)
            else { throw ChangeError.keyNotFound }
        } catch let error as ChangeError {
            throw error
        } catch {
            throw .unavailable("\(error)")
        }
        try await refresh(instance)
    }

    private func scoped(
        _ instance: InstanceConfig, label: String, scopes: Set<APIKeyScope>, notBefore: Date?, expiresAt: Date?,
        rotatedFrom: String?
    ) throws(ChangeError) -> Issued {
        do {
            let text = try ScopedKeyText.generate()
            let record = APIKeyRecord(
                instanceID: instance.id, id: text.id, kind: .scoped, label: label,
                scopes: scopes.sorted().map(\.rawValue), secretDigest: try text.digest, notBefore: notBefore,
                expiresAt: expiresAt, createdAt: now(), rotatedFrom: rotatedFrom)
            return Issued(record: record, text: text.text)
        } catch {
            throw .crypto("\(error)")
        }
    }

    private func beams(_ instance: InstanceConfig, id: String, secret: String, label: String, rotatedFrom: String?)
        throws(ChangeError) -> APIKeyRecord
    {
        guard let seal else { throw .noEncryptionKey }
        do {
            let sealed = try seal.seal(Array(secret.utf8), associatedData: Self.associatedData(instance.id, id))
            return APIKeyRecord(
                instanceID: instance.id, id: id, kind: .beams, label: label, scopes: [],
                sealedSecret: Data(sealed).base64EncodedString(), createdAt: now(),
                rotatedFrom: rotatedFrom)
        } catch {
            throw .crypto("\(error)")
        }
    }
}
