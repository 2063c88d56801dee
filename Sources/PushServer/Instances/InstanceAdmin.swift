import BeamsModel
import Foundation
import HTTPClient
import JSON
import JWTSigner
import Observability
import PushStore

/// Creating, changing and deleting run-time instances: what the admin API and `push-server instances` share. A
/// definition is validated exactly as a config-file instance is; a refused change writes nothing but its audit
/// entry; an accepted one is written with its audit entry in one transaction.
struct InstanceAdmin: Sendable {
    let store: any InstanceDefinitionStore & AuditLog
    /// Seals stored definitions (`keys.encryptionKey`); nil: nothing can be stored.
    let seal: SecretSeal?
    let policy: DestinationPolicy
    let environment: [String: String]
    let validateKey: @Sendable (String) -> String?
    /// The config file's instance ids (lower-cased): read-only here, and never shadowed.
    let configIDs: Set<String>
    let now: @Sendable () -> Date

    /// Why a change was refused.
    enum Failure: Error, Sendable, Equatable {
        /// The definition has errors (every one, as `check-config` names them): nothing changed.
        case invalid([ConfigIssue])
        /// The instance is defined in the config file.
        case readOnly(String)
        /// A create found the id taken (by a stored instance, or the config file's when `configured`).
        case exists(String, configured: Bool)
        case notFound(String)
        /// `If-Match` named another version.
        case versionMismatch(current: Int64)
        /// `keys.encryptionKey` is not set: secrets cannot be stored sealed.
        case noEncryptionKey
        /// The store failed (nothing is known to have changed).
        case store(String)
    }

    /// A stored instance as shown: its definition masked (nil when it does not open here).
    struct Shown: Sendable {
        var row: StoredInstance
        var definition: InstanceDefinition?
    }

    /// What an accepted change returns.
    struct Applied: Sendable {
        var id: String
        var version: Int64
        var definition: InstanceDefinition
        var warnings: [ConfigIssue]
        /// The Beams secret made for a create that named none: shown this once.
        var generatedSecret: String?
    }

    /// Every live stored instance.
    func list() async throws(Failure) -> (version: Int64, instances: [Shown]) {
        do {
            let (version, rows) = try await store.storedInstances()
            return (
                version,
                rows.map { row in Shown(row: row, definition: seal.flatMap { InstanceDefinition.open(row, with: $0) }) }
            )
        } catch {
            throw .store("\(error)")
        }
    }

    /// The stored instance `id`. - Throws: `notFound`.
    func show(_ id: String) async throws(Failure) -> Shown {
        guard let found = try await list().instances.first(where: { $0.row.id == id.lowercased() }) else {
            throw .notFound(id)
        }
        return found
    }

    /// Creates an instance from `object` (an id and a Beams secret are made when absent).
    func create(_ object: [String: JSONValue], actor: AuditActor) async throws(Failure) -> Applied {
        var object = object
        var generatedSecret: String?
        if object["id"] == nil || object["id"]?.isNull == true {
            object["id"] = .string(UUID().uuidString.lowercased())
        }
        let named = ["secretKey", "secretKeyEnv", "secretKeyFile"].contains {
            object[$0] != nil && object[$0]?.isNull != true
        }
        if !named {
            do {
                let secret = try ScopedKeyText.randomText(48, ScopedKeyText.secretAlphabet)
                object["secretKey"] = .string(secret)
                generatedSecret = secret
            } catch {
                throw .store("no random secret: \(error)")
            }
        }
        let id = (object["id"]?.stringValue ?? "").lowercased()
        let target = id.isEmpty ? "instance" : id
        if configIDs.contains(id) {
            await refused(actor, id, "instance.create", "exists")
            throw .exists(id, configured: true)
        }
        let definition = InstanceDefinition(object: object)
        let warnings = try await validated(definition, id: nil, actor: actor, action: "instance.create", target: target)
        let sealed = try sealed(definition, id: id)
        let entry = actor.entry(id, "instance.create", id, at: now())
        switch try await change(.create(id: id, sealedDefinition: sealed), entry) {
        case .applied(let version):
            return Applied(
                id: id, version: version, definition: definition, warnings: warnings,
                generatedSecret: generatedSecret)
        case .exists:
            await refused(actor, id, "instance.create", "exists")
            throw .exists(id, configured: false)
        case .notFound, .versionMismatch:
            throw .store("unexpected answer to a create")
        }
    }

    /// How an update gives the new definition.
    enum Edit: Sendable {
        /// A JSON merge patch on the stored definition (PATCH).
        case merge([String: JSONValue])
        /// A whole definition (PUT).
        case replace([String: JSONValue])
    }

    /// Changes the stored instance `id`. - Parameter expectedVersion: `If-Match`, nil for any.
    func update(_ id: String, _ edit: Edit, expectedVersion: Int64?, actor: AuditActor) async throws(Failure)
        -> Applied
    {
        let id = id.lowercased()
        if configIDs.contains(id) {
            await refused(actor, id, "instance.update", "read_only")
            throw .readOnly(id)
        }
        let current: Shown
        do {
            current = try await show(id)
        } catch {
            if case .notFound = error { await refused(actor, id, "instance.update", "not_found") }
            throw error
        }
        guard let old = current.definition else {
            throw seal == nil ? .noEncryptionKey : .store("the stored definition does not open with keys.encryptionKey")
        }
        var definition: InstanceDefinition
        switch edit {
        case .merge(let patch): definition = old.merging(patch)
        case .replace(let object): definition = old.replacing(with: object)
        }
        if definition.object["id"] == nil { definition.object["id"] = .string(id) }
        let warnings = try await validated(definition, id: id, actor: actor, action: "instance.update", target: id)
        let sealed = try sealed(definition, id: id)
        let entry = actor.entry(id, "instance.update", id, at: now())
        switch try await change(.update(id: id, sealedDefinition: sealed, expectedVersion: expectedVersion), entry) {
        case .applied(let version):
            return Applied(id: id, version: version, definition: definition, warnings: warnings, generatedSecret: nil)
        case .notFound:
            await refused(actor, id, "instance.update", "not_found")
            throw .notFound(id)
        case .versionMismatch(let current):
            await refused(actor, id, "instance.update", "version_mismatch")
            throw .versionMismatch(current: current)
        case .exists:
            throw .store("unexpected answer to an update")
        }
    }

    /// Deletes the stored instance `id`. - Returns: the set's new version.
    func delete(_ id: String, expectedVersion: Int64?, actor: AuditActor) async throws(Failure) -> Int64 {
        let id = id.lowercased()
        if configIDs.contains(id) {
            await refused(actor, id, "instance.delete", "read_only")
            throw .readOnly(id)
        }
        let entry = actor.entry(id, "instance.delete", id, at: now())
        switch try await change(.delete(id: id, expectedVersion: expectedVersion), entry) {
        case .applied(let version):
            return version
        case .notFound:
            await refused(actor, id, "instance.delete", "not_found")
            throw .notFound(id)
        case .versionMismatch(let current):
            await refused(actor, id, "instance.delete", "version_mismatch")
            throw .versionMismatch(current: current)
        case .exists:
            throw .store("unexpected answer to a delete")
        }
    }

    // MARK: Steps

    private func validated(
        _ definition: InstanceDefinition, id: String?, actor: AuditActor, action: String,
        target: String
    ) async throws(Failure) -> [ConfigIssue] {
        switch definition.validate(id: id, policy: policy, environment: environment, validateKey: validateKey) {
        case .valid(_, let warnings):
            return warnings
        case .invalid(let issues):
            await refused(actor, id ?? target, action, "invalid")
            throw .invalid(issues)
        }
    }

    private func sealed(_ definition: InstanceDefinition, id: String) throws(Failure) -> String {
        guard let seal else { throw .noEncryptionKey }
        do {
            return try definition.sealed(id: id, with: seal)
        } catch {
            throw .store("sealing failed: \(error)")
        }
    }

    private func change(_ change: InstanceChange, _ entry: AuditEntry) async throws(Failure) -> InstanceChangeOutcome {
        do {
            return try await store.changeInstance(change, at: entry.at, audit: entry)
        } catch {
            throw .store("\(error)")
        }
    }

    /// Records a refused change (its outcome names why); a failure to record is not the caller's error.
    private func refused(_ actor: AuditActor, _ id: String, _ action: String, _ reason: String) async {
        try? await store.appendAudit(actor.entry(id, action, id, at: now(), outcome: "refused:\(reason)"))
    }
}
