import Foundation
import HTTPServer
import PushStore

/// Who is making a change, for the audit log: the key that authenticated the request (its id, never the key), the
/// client's address and the request id; or the command line's user. Turned into an `AuditEntry` that the store
/// writes in the change's transaction.
package struct AuditActor: Sendable, Equatable {
    /// A scoped key's id, `beams-secret`, or `cli:<user>`.
    package var actor: String
    /// The client's address, or `cli`.
    package var source: String
    package var requestID: String

    package init(actor: String, source: String, requestID: String) {
        self.actor = actor
        self.source = source
        self.requestID = requestID
    }

    /// The caller of an authenticated request.
    package init(_ credential: Credential, _ request: HTTPRequest) {
        self.init(actor: Self.name(credential), source: request.clientAddress, requestID: request.requestID)
    }

    /// The user running a CLI command (`USER`, else `LOGNAME`), with a fresh id for the run.
    package static func commandLine(environment: [String: String] = ProcessInfo.processInfo.environment) -> AuditActor {
        let user = environment["USER"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["LOGNAME"] ?? "unknown"
        return AuditActor(actor: "cli:\(user)", source: "cli", requestID: "cli-" + UUID().uuidString.lowercased())
    }

    /// A scoped key is named by its id; any Beams secret (the config file's or a rolled one) as `beams-secret`.
    static func name(_ credential: Credential) -> String {
        credential.isBeamsSecret ? "beams-secret" : (credential.keyID ?? "unknown")
    }

    /// The entry recording `action` on `target` in `instanceID` at `at`.
    package func entry(_ instanceID: String, _ action: String, _ target: String, at: Date, outcome: String = "success")
        -> AuditEntry
    {
        AuditEntry(
            at: at, instanceID: instanceID, actor: actor, source: source, action: action, target: target,
            outcome: outcome, requestID: requestID)
    }
}
