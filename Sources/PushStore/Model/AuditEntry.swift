import Foundation

/// One line of an instance's audit log (docs/OPERATIONS.md, "Many apps: audit log"): who changed what, from where,
/// and how it ended. Written by the store in the same transaction as the change it records, so a change that
/// committed always has its line and one that failed has none. Never holds a secret: `actor` is a key id,
/// `beams-secret` or `cli:<user>`.
package struct AuditEntry: Sendable, Equatable {
    /// The store's sequence number, increasing with every entry (0 until stored). The read cursor.
    package var seq: Int64
    package var at: Date
    package var instanceID: String
    /// A scoped key's id, `beams-secret` (or the stored Beams secret's id), or `cli:<user>`.
    package var actor: String
    /// The client's address (`cli` for the command line).
    package var source: String
    /// What was done: `key.create`, `key.roll`, `key.revoke`, `beams_secret.roll`, ….
    package var action: String
    /// What it was done to (a key id, a user id, a publish id); empty when the action names it.
    package var target: String
    /// `success` or `denied`.
    package var outcome: String
    /// The request's id (`X-Request-Id`), or the CLI run's.
    package var requestID: String

    package init(
        seq: Int64 = 0, at: Date, instanceID: String, actor: String, source: String, action: String, target: String,
        outcome: String = "success", requestID: String
    ) {
        self.seq = seq
        self.at = at
        self.instanceID = instanceID
        self.actor = actor
        self.source = source
        self.action = action
        self.target = target
        self.outcome = outcome
        self.requestID = requestID
    }

    /// The same entry for another target (a roll records the new key's id once it is made).
    package func targeting(_ target: String) -> AuditEntry {
        var copy = self
        copy.target = target
        return copy
    }
}
