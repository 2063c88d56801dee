import BeamsModel
import Foundation
import HTTPServer
import Observability
import PushStore

extension AppContext {
    /// Run-time instance changes as this node makes them (`InstanceAdmin`).
    var instanceAdmin: InstanceAdmin {
        InstanceAdmin(
            store: store, seal: keys.seal, policy: config.webhooks.policy,
            environment: instanceSync.environment, validateKey: instanceSync.validateKey,
            configIDs: instanceSync.fileIDs,
            now: now)
    }

    /// Checks `Authorization: Bearer <server-admin key>` against every configured server-admin key, each compared
    /// in constant time (all of them, whatever matched), so neither a key nor which one matched shows in the
    /// timing. An address locked out by wrong keys (`limits.authFailuresPerIP`) gets 429 without a comparison.
    /// - Parameters:
    ///   - action: for a change, its audit action: a refused attempt is recorded as `denied` (reads are not).
    /// - Returns: the admin key's identity, for the audit entry (`admin:<id>`).
    /// - Throws: 400 without the header; 401 for anything but a server-admin key (an instance's keys included);
    ///   429 when locked out.
    func authorizeServerAdmin(_ request: HTTPRequest, action: String?, target: String) async throws(BeamsError)
        -> AuditActor
    {
        guard let header = request.headers.first("authorization"), !header.isEmpty else { throw .missingAuthorization }
        let client = limiters.clientKey(request)
        if case .limited(let retryAfter) = limiters.authFailures?.check(client) {
            metrics.increment(.rateLimited, ["limit": "auth"])
            throw .tooManyAuthFailures(retryAfter: retryAfter)
        }
        let presented = BearerToken.parse(header) ?? ""
        var matched: AdminKey?
        for key in config.admin.keys where ConstantTime.equals(presented, key.secret) && matched == nil {
            matched = key
        }
        if let matched {
            return AuditActor(actor: "admin:\(matched.id)", source: request.clientAddress, requestID: request.requestID)
        }
        if case .limited? = limiters.authFailures?.recordFailure(client) {
            logger.warning(
                "Address locked out after repeated wrong server-admin keys",
                ["client": client, "request": request.requestID])
        }
        if let action {
            let actor = ScopedKeyText.parse(presented)?.id ?? "unknown"
            let entry = AuditActor(actor: actor, source: request.clientAddress, requestID: request.requestID)
                .entry(target.lowercased(), action, target.lowercased(), at: now(), outcome: "denied")
            do {
                try await store.appendAudit(entry)
            } catch {
                logger.warning("A refused admin request could not be audited", ["error": "\(error)"])
            }
        }
        throw config.admin.keys.isEmpty
            ? BeamsError(
                401, "Unauthorized", "No server-admin keys are configured (admin.keys or PUSH_SERVER_ADMIN_KEYS)")
            : BeamsError(401, "Unauthorized", "Incorrect server-admin key")
    }
}
