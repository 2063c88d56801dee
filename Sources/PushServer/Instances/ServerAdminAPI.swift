import BeamsModel
import Foundation
import HTTPServer
import JSON
import Logging
import Observability
import PushStore

/// The server's own admin API (docs/API.md, "Server admin API"): run-time instances and the server-wide audit
/// log, authenticated by server-admin keys only (`admin.keys`, `PUSH_SERVER_ADMIN_KEYS`), never by an instance key.
///
/// - `GET /admin_api/v1/server/instances`: every instance served (config-file and stored), secrets masked.
/// - `POST …/instances`: creates one from a definition (an entry of the config file's `instances`).
/// - `GET|PUT|PATCH|DELETE …/instances/{id}`: one instance; PUT replaces the definition, PATCH merges into it
///   (RFC 7396); `If-Match: "<version>"` makes a change conditional (412 when another change came first).
/// - `GET /admin_api/v1/server/audit?since=&limit=`: every instance's audit entries, as the per-instance route.
struct ServerAdminAPI: Sendable {
    let app: AppContext
    static let base = "/admin_api/v1/server"

    func register(into router: inout Router) {
        let instances = "\(Self.base)/instances"
        router.get(instances, bodyLimit: .noBody) { try await list($0) }
        router.post(instances, bodyLimit: .beams(maxKiB: 64)) { try await create($0) }
        router.get("\(instances)/:id", bodyLimit: .noBody) { try await show($0) }
        router.put("\(instances)/:id", bodyLimit: .beams(maxKiB: 64)) { try await update($0, merge: false) }
        router.add(.patch, "\(instances)/:id", bodyLimit: .beams(maxKiB: 64)) { try await update($0, merge: true) }
        router.delete("\(instances)/:id", bodyLimit: .noBody) { try await delete($0) }
        router.get("\(Self.base)/audit", bodyLimit: .noBody) { try await audit($0) }
    }

    // MARK: Routes

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try await app.authorizeServerAdmin(request, action: nil, target: "")
        let stored = try await self.map { () async throws(InstanceAdmin.Failure) in try await admin.list() }
        let snapshot = app.directory.snapshot
        var rendered: [JSONValue] = []
        for entry in snapshot.entries.values.sorted(by: { $0.config.id.lowercased() < $1.config.id.lowercased() })
        where entry.source == .config {
            rendered.append(.object(["id": .string(entry.config.id), "source": .string("config")]))
        }
        for shown in stored.instances {
            rendered.append(render(shown))
        }
        return .json(.object(["version": .string(String(stored.version)), "instances": .array(rendered)]))
    }

    func show(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try await app.authorizeServerAdmin(request, action: nil, target: "")
        let id = request.parameters["id"] ?? ""
        if let entry = app.directory.entry(id), entry.source == .config {
            return .json(
                .object([
                    "id": .string(entry.config.id), "source": .string("config"),
                    "description": .string("Defined in the config file: read-only here"),
                ]))
        }
        let shown = try await self.map { () async throws(InstanceAdmin.Failure) in try await admin.show(id) }
        return .json(render(shown), headers: ["ETag": "\"\(shown.row.version)\""])
    }

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let actor = try await app.authorizeServerAdmin(request, action: "instance.create", target: "")
        try app.requireJSONContentType(request)
        let body = try app.jsonObject(request)
        let applied = try await self.map { () async throws(InstanceAdmin.Failure) in
            try await admin.create(body, actor: actor)
        }
        await follow(applied.id)
        app.logger.notice(
            "Instance created",
            [
                "instance": applied.id, "actor": actor.actor,
                "request": request.requestID,
            ])
        var object = rendered(applied)
        if let secret = applied.generatedSecret { object["secretKey"] = .string(secret) }
        return .json(.object(object), status: .created, headers: ["ETag": "\"\(applied.version)\""])
    }

    func update(_ request: HTTPRequest, merge: Bool) async throws -> HTTPResponse {
        let id = request.parameters["id"] ?? ""
        let actor = try await app.authorizeServerAdmin(request, action: "instance.update", target: id)
        try app.requireJSONContentType(request)
        let body = try app.jsonObject(request)
        let expected = try Self.ifMatch(request)
        let applied = try await self.map { () async throws(InstanceAdmin.Failure) in
            try await admin.update(id, merge ? .merge(body) : .replace(body), expectedVersion: expected, actor: actor)
        }
        await follow(applied.id)
        app.logger.notice(
            "Instance changed",
            [
                "instance": applied.id, "actor": actor.actor,
                "request": request.requestID,
            ])
        return .json(.object(rendered(applied)), headers: ["ETag": "\"\(applied.version)\""])
    }

    func delete(_ request: HTTPRequest) async throws -> HTTPResponse {
        let id = request.parameters["id"] ?? ""
        let actor = try await app.authorizeServerAdmin(request, action: "instance.delete", target: id)
        let expected = try Self.ifMatch(request)
        let version = try await self.map { () async throws(InstanceAdmin.Failure) in
            try await admin.delete(id, expectedVersion: expected, actor: actor)
        }
        await follow()
        app.logger.notice("Instance deleted", ["instance": id, "actor": actor.actor, "request": request.requestID])
        return .json(
            .object([
                "id": .string(id.lowercased()), "deleted": .bool(true),
                "version": .string(String(version)),
            ]))
    }

    func audit(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try await app.authorizeServerAdmin(request, action: nil, target: "")
        let page = try PageQuery(request)
        let entries: [AuditEntry]
        do {
            entries = try await app.store.auditEntries(
                instanceID: nil, action: request.queryValue("action").flatMap { $0.isEmpty ? nil : $0 },
                after: page.since, limit: page.limit)
        } catch {
            throw app.storeUnavailable
        }
        return .json(
            .object([
                "entries": .array(
                    entries.map { entry in
                        guard case .object(var object) = AuditAPI.render(entry) else { return AuditAPI.render(entry) }
                        object["instanceId"] = .string(entry.instanceID)
                        return .object(object)
                    }),
                "next": entries.count == page.limit ? .string(String(entries.last?.seq ?? page.since)) : .null,
            ]))
    }

    // MARK: Helpers

    var admin: InstanceAdmin { app.instanceAdmin }

    /// Installs the change on this node before answering: the next request here already sees it (other nodes
    /// within their poll or NOTIFY).
    private func follow(_ id: String? = nil) async {
        do {
            try await app.instanceSync.refresh()
        } catch {
            app.logger.warning(
                "The change is stored but not yet served here; it is picked up at the next poll",
                ["error": "\(error)"])
        }
        // A changed Beams secret applies here at once (other nodes re-read an instance's keys within a second).
        if let id, let instance = app.directory.config(id) { _ = try? await app.keys.reload(instance) }
    }

    private func render(_ shown: InstanceAdmin.Shown) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(shown.row.id),
            "source": .string("store"),
            "version": .string(String(shown.row.version)),
            "createdAt": .string(shown.row.createdAt.iso8601),
            "updatedAt": .string(shown.row.updatedAt.iso8601),
            "served": .bool(app.directory.entry(shown.row.id)?.source == .store),
        ]
        object["definition"] = shown.definition?.masked ?? .null
        return .object(object)
    }

    private func rendered(_ applied: InstanceAdmin.Applied) -> [String: JSONValue] {
        var object: [String: JSONValue] = [
            "id": .string(applied.id),
            "source": .string("store"),
            "version": .string(String(applied.version)),
            "definition": applied.definition.masked,
        ]
        if !applied.warnings.isEmpty {
            object["warnings"] = .array(applied.warnings.map { .string("\($0.path): \($0.message)") })
        }
        return object
    }

    /// `If-Match: "<version>"` (or the bare number); `*` or absent: any version.
    static func ifMatch(_ request: HTTPRequest) throws(BeamsError) -> Int64? {
        guard let header = request.headers.first("if-match")?.trimmingCharacters(in: .whitespaces),
            header != "*"
        else { return nil }
        let bare = header.hasPrefix("W/") ? String(header.dropFirst(2)) : header
        guard let version = Int64(bare.trimmingCharacters(in: CharacterSet(charactersIn: "\""))) else {
            throw BeamsError(400, "Bad request", "If-Match must be the instance's version as its ETag gives it")
        }
        return version
    }

    /// Turns an `InstanceAdmin` refusal into its HTTP answer.
    func map<T>(_ body: () async throws(InstanceAdmin.Failure) -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            switch error {
            case .invalid(let issues):
                throw InvalidDefinition(issues: issues)
            case .readOnly(let id):
                throw BeamsError(
                    409, "Instance is read-only",
                    "Instance \(id) is defined in the config file: change "
                        + "it there and reload the server (SIGHUP); the admin API changes only instances it created")
            case .exists(let id, let configured):
                throw BeamsError(
                    409, "Instance exists",
                    configured
                        ? "Instance \(id) is defined in the config file: pick another id"
                        : "Instance \(id) already exists: change it with PUT or PATCH")
            case .notFound:
                throw BeamsError.instanceNotFound
            case .versionMismatch(let current):
                throw BeamsError(
                    412, "Precondition Failed",
                    "The instance changed since (its version is now \(current)): read it again")
            case .noEncryptionKey:
                throw BeamsError(
                    409, "Conflict",
                    "keys.encryptionKey is not set: run-time instances are stored "
                        + "sealed with it, so none can be created or changed")
            case .store:
                throw app.storeUnavailable
            }
        }
    }
}

/// 422 for a definition with errors: Beams' `{"error","description"}` plus `issues`, each problem with its path.
struct InvalidDefinition: HTTPResponseError {
    var issues: [ConfigIssue]
    var status: HTTPStatus { HTTPStatus(422) }
    var title: String { "Invalid instance" }
    var description: String {
        "The instance definition is not valid; nothing was changed: "
            + issues.map { "\($0.path): \($0.message)" }.joined(separator: "; ")
    }
}

extension HTTPResponse {
    /// JSON with extra headers (`ETag`).
    static func json(_ value: JSONValue, status: HTTPStatus = .ok, headers: KeyValuePairs<String, String>)
        -> HTTPResponse
    {
        var response = HTTPResponse.json(value, status: status)
        for (name, value) in headers { response.headers.replaceOrAdd(name, value) }
        return response
    }
}
