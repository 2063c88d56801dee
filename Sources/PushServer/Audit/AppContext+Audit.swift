import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import PushStore

extension AppContext {
    /// `authorize` for a route that changes state: who the caller is, for the audit entry its change writes. A
    /// refused request (401, 403) is recorded as `denied` with the public id of the key it presented (a scoped
    /// key's id, `beams-secret` for a narrowed Beams secret, `unknown` otherwise), never the presented text.
    func authorizeChange(
        _ request: HTTPRequest, _ instance: InstanceConfig, _ scope: APIKeyScope, action: String,
        target: String
    ) async throws(BeamsError) -> AuditActor {
        do {
            return AuditActor(try await authorize(request, instance, scope), request)
        } catch {
            if error.statusCode == 401 || error.statusCode == 403 {
                await recordDenied(
                    request, instance, action: action, target: target, forbidden: error.statusCode == 403)
            }
            throw error
        }
    }

    /// `admit` for a route that changes state: a refusal by the key (401, 403) is audited as `authorizeChange`
    /// audits one, by a task of its own (admission runs before the body is read and cannot wait), so its entry may
    /// be stored a moment after the answer is sent.
    func admitChange(
        _ request: HTTPRequest, _ instance: InstanceConfig, _ scope: APIKeyScope, action: String,
        target: String
    ) throws(BeamsError) {
        do throws(BeamsError) {
            try admit(request, instance, scope)
        } catch {
            if error.statusCode == 401 || error.statusCode == 403 {
                let forbidden = error.statusCode == 403
                Task { await recordDenied(request, instance, action: action, target: target, forbidden: forbidden) }
            }
            throw error
        }
    }

    private func recordDenied(
        _ request: HTTPRequest, _ instance: InstanceConfig, action: String, target: String,
        forbidden: Bool
    ) async {
        let presented = BearerToken.parse(request.headers.first("authorization")) ?? ""
        let actor = ScopedKeyText.parse(presented)?.id ?? (forbidden ? "beams-secret" : "unknown")
        let entry = AuditActor(actor: actor, source: request.clientAddress, requestID: request.requestID)
            .entry(instance.id, action, target, at: now(), outcome: "denied")
        do {
            try await store.appendAudit(entry)
        } catch {
            logger.warning("A refused request could not be audited", ["instance": instance.id, "error": "\(error)"])
        }
    }
}
