import Foundation

/// An instance created at run time (the admin API or `push-server instances`), as the store keeps it: its
/// definition (the same JSON object as an entry of the config file's `instances`) sealed with the key-encryption
/// key, so its secrets are never stored in the clear. The store never reads the definition.
package struct StoredInstance: Sendable, Equatable {
    /// The instance id, lower-cased.
    package var id: String
    /// The sealed definition (base64 of AES-256-GCM, `InstanceDefinitionSeal`).
    package var sealedDefinition: String
    /// The set's version at this instance's last change: unchanged rows keep theirs, so a node rebuilds only what
    /// changed.
    package var version: Int64
    package var createdAt: Date
    package var updatedAt: Date

    package init(id: String, sealedDefinition: String, version: Int64 = 0, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.sealedDefinition = sealedDefinition
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// A change to the stored instances, applied whole with its audit entry, or not at all.
package enum InstanceChange: Sendable, Equatable {
    /// Stores a new instance (an id deleted earlier may be used again).
    case create(id: String, sealedDefinition: String)
    /// Replaces a live instance's definition; with `expectedVersion`, only while its version is still that one.
    case update(id: String, sealedDefinition: String, expectedVersion: Int64?)
    /// Deletes a live instance (its row stays as a tombstone, so the set's version never goes back).
    case delete(id: String, expectedVersion: Int64?)

    /// The instance the change is about.
    package var id: String {
        switch self {
        case .create(let id, _), .update(let id, _, _), .delete(let id, _): id
        }
    }
}

/// What became of an `InstanceChange`.
package enum InstanceChangeOutcome: Sendable, Equatable {
    /// Applied; the set is now at `version`.
    case applied(version: Int64)
    /// A create found a live instance with the id: nothing changed.
    case exists
    /// An update or delete found no live instance with the id: nothing changed.
    case notFound
    /// The instance's version was not the expected one: nothing changed.
    case versionMismatch(current: Int64)
}

/// Where run-time instances are kept, with a version counter for the whole set that every write raises in its own
/// transaction, so a node learns of any change on any node by comparing one number (docs/OPERATIONS.md, "Many
/// apps: run-time instances").
package protocol InstanceDefinitionStore: Sendable {
    /// The live stored instances (oldest first) and the set's version, read in one transaction.
    func storedInstances() async throws -> (version: Int64, instances: [StoredInstance])
    /// The set's version alone (0 before any change): the cheap check a node runs to know whether to read again.
    func storedInstancesVersion() async throws -> Int64
    /// Applies `change` at `at` and appends `audit` in the same transaction; on PostgreSQL also announces it to
    /// every node (`InstanceChangeNotifying`). Nothing is written (the audit entry included) unless it applies.
    func changeInstance(_ change: InstanceChange, at: Date, audit: AuditEntry?) async throws -> InstanceChangeOutcome
}

/// A backend whose nodes announce changes to the stored instances (PostgreSQL's LISTEN/NOTIFY): a hint to read
/// the version now; the version check stays the truth.
package protocol InstanceChangeNotifying: Sendable {
    /// Calls `onChange` (on a thread of the store's) for each announcement, and each time listening (re)starts,
    /// until the store closes. - Returns: false when this backend cannot listen.
    func listenForInstanceChanges(_ onChange: @escaping @Sendable () -> Void) -> Bool
}
