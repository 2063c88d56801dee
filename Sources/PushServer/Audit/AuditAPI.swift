import BeamsModel
import Foundation
import HTTPServer
import JSON
import PushStore

/// Reading an instance's audit log (docs/API.md, "Audit log"): `GET …/audit?since=<seq>&limit=<n>`, oldest first,
/// with the cursor of the next page. Needs `instance:admin`. There is no route that changes or deletes an entry.
struct AuditAPI: Sendable {
    let app: AppContext
    static let defaultLimit = 100
    static let maxLimit = 1000

    func register(into router: inout Router) {
        router.get("/admin_api/v1/instances/:instance/audit", bodyLimit: .noBody) { try await list($0) }
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try await app.authorize(request, instance, .instanceAdmin)
        try app.checkRateLimit(instance)
        var since: Int64 = 0
        if let text = request.queryValue("since") {
            guard let value = Int64(text), value >= 0 else {
                throw BeamsError.schema("since", "since must be the sequence number of an entry (0 or more)")
            }
            since = value
        }
        var limit = Self.defaultLimit
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...Self.maxLimit).contains(value) else {
                throw BeamsError.schema("limit", "limit must be between 1 and \(Self.maxLimit)")
            }
            limit = value
        }
        let entries: [AuditEntry]
        do {
            entries = try await app.store.auditEntries(instanceID: instance.id, after: since, limit: limit)
        } catch {
            throw BeamsError.storeUnavailable
        }
        return .json(.object([
            "entries": .array(entries.map(Self.render)),
            "next": entries.count == limit ? .string(String(entries.last?.seq ?? since)) : .null,
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
