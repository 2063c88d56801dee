import BeamsModel
import Foundation
import HTTPServer
import JSON
import Logging
import PushStore

/// Reading an instance's audit log (docs/API.md, "Audit log"): `GET …/audit?since=<seq>&limit=<n>[&action=<a>]`,
/// oldest first, with the cursor of the next page. Needs `instance:admin`. There is no route that changes or
/// deletes an entry.
struct AuditAPI: Sendable {
    let app: AppContext

    func register(into router: inout Router) {
        router.get("/admin_api/v1/instances/:instance/audit", bodyLimit: .noBody) { try await list($0) }
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .instanceAdmin)
        try app.checkRateLimit(instance)
        let page = try PageQuery(request)
        let action = request.queryValue("action").flatMap { $0.isEmpty ? nil : $0 }
        let entries: [AuditEntry]
        do {
            entries = try await app.store.auditEntries(
                instanceID: instance.id, action: action, after: page.since,
                limit: page.limit)
        } catch {
            throw app.storeUnavailable
        }
        return .json(
            .object([
                "entries": .array(entries.map(Self.render)),
                "next": entries.count == page.limit ? .string(String(entries.last?.seq ?? page.since)) : .null,
            ]))
    }

    static func render(_ entry: AuditEntry) -> JSONValue {
        .object([
            "seq": .string(String(entry.seq)),
            "time": .string(entry.at.iso8601),
            "actor": .string(entry.actor),
            "source": .string(entry.source),
            "action": .string(entry.action),
            "target": .string(entry.target),
            "outcome": .string(entry.outcome),
            "requestId": .string(entry.requestID),
        ])
    }
}
