import BeamsModel
import ConfigModel
import Foundation
import HTTPServer
import JSON
import Logging
import PushStore

/// Managing an instance's keys (docs/API.md, "Keys"): create, list (never a secret), roll, revoke, and roll the
/// Beams secret. Every route needs the `instance:admin` scope, which the Beams secret holds unless
/// `beamsSecretScopes` narrows it.
struct KeysAPI: Sendable {
    let app: AppContext
    /// A roll keeps the old key working this long unless the request says otherwise: a day, as long as the user
    /// tokens SDKs issue live, so no signed-in device loses its binding on a Beams secret roll.
    static let defaultOverlap = "24h"

    func register(into router: inout Router) {
        let base = "/admin_api/v1/instances/:instance"
        router.get("\(base)/keys", bodyLimit: .noBody) { try await list($0) }
        router.post("\(base)/keys", bodyLimit: .beams(maxKiB: 4)) { try await create($0) }
        router.post("\(base)/keys/:key/roll", bodyLimit: .beams(maxKiB: 1)) { try await roll($0) }
        router.delete("\(base)/keys/:key", bodyLimit: .noBody) { try await revoke($0) }
        router.post("\(base)/beams-secret/roll", bodyLimit: .beams(maxKiB: 1)) { try await rollBeamsSecret($0) }
    }

    func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, _) = try await authorized(request, "key.list", "")
        let (keys, fromConfig, current) = try await self.map { () async throws(KeyRing.ChangeError) in
            try await app.keys.list(instance)
        }
        return .json(
            .object([
                "keys": .array(keys.map { Self.render($0, current: current) }),
                "beamsSecret": .object([
                    "source": .string(fromConfig ? "config" : "store"),
                    "scopes": .array(instance.beamsSecretScopes.sorted().map { .string($0.rawValue) }),
                ]),
            ]))
    }

    func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, actor) = try await authorized(request, "key.create", "")
        try app.requireJSONContentType(request)
        let body = try app.jsonObject(request)
        guard let label = body["label"]?.stringValue, (1...200).contains(label.count) else {
            throw BeamsError.schema("label", "label is required (1-200 characters)")
        }
        guard let names = body["scopes"]?.arrayValue, !names.isEmpty, names.allSatisfy({ $0.stringValue != nil }) else {
            throw BeamsError.schema("scopes", "scopes is required: a non-empty list of scope names")
        }
        let scopes: Set<APIKeyScope>
        switch APIKeyScope.parse(names.compactMap(\.stringValue)) {
        case .success(let parsed): scopes = parsed
        case .failure(let unknown): throw BeamsError.schema("scopes", unknown.description)
        }
        let notBefore = try Self.date(body, "notBefore")
        var expiresAt = try Self.date(body, "expiresAt")
        if let text = body["expiresIn"]?.stringValue {
            guard expiresAt == nil else {
                throw BeamsError.schema("expiresIn", "give expiresAt or expiresIn, not both")
            }
            guard let seconds = RollOverlap.seconds(text), seconds > 0 else {
                throw BeamsError.schema("expiresIn", "expiresIn must be a duration such as 1h, 24h, 7d (at most 30d)")
            }
            expiresAt = app.now().addingTimeInterval(seconds)
        }
        if let notBefore, let expiresAt, expiresAt <= notBefore {
            throw BeamsError.schema("expiresAt", "expiresAt must be after notBefore")
        }
        let issued = try await self.map { () async throws(KeyRing.ChangeError) in
            try await app.keys.create(
                instance, label: label, scopes: scopes, notBefore: notBefore, expiresAt: expiresAt,
                by: actor)
        }
        app.logger.info(
            "Key created", ["instance": instance.id, "key": issued.record.id, "request": request.requestID])
        return .json(.object(Self.renderIssued(issued)), status: .created)
    }

    func roll(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, actor) = try await authorized(request, "key.roll", request.parameters["key"] ?? "")
        let overlap = try overlap(request)
        let keyID = request.parameters["key"] ?? ""
        let (issued, retiredAt) = try await self.map { () async throws(KeyRing.ChangeError) in
            try await app.keys.roll(instance, keyID: keyID, overlap: overlap, by: actor)
        }
        app.logger.info(
            "Key rolled",
            [
                "instance": instance.id, "key": keyID, "new_key": issued.record.id,
                "request": request.requestID,
            ])
        var body = Self.renderIssued(issued)
        body["previousKeyExpiresAt"] = .string(retiredAt.iso8601)
        return .json(.object(body), status: .created)
    }

    func rollBeamsSecret(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, actor) = try await authorized(request, "beams_secret.roll", "")
        let overlap = try overlap(request)
        let (issued, retiredAt) = try await self.map { () async throws(KeyRing.ChangeError) in
            try await app.keys.rollBeamsSecret(instance, overlap: overlap, by: actor)
        }
        app.logger.info(
            "Beams secret rolled",
            [
                "instance": instance.id, "new_key": issued.record.id,
                "request": request.requestID,
            ])
        return .json(
            .object([
                "id": .string(issued.record.id),
                "secretKey": .string(issued.text),
                "previousSecretExpiresAt": .string(retiredAt.iso8601),
            ]), status: .created)
    }

    func revoke(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (instance, actor) = try await authorized(request, "key.revoke", request.parameters["key"] ?? "")
        let keyID = request.parameters["key"] ?? ""
        let record = try await self.map { () async throws(KeyRing.ChangeError) in
            try await app.keys.revoke(instance, keyID: keyID, by: actor)
        }
        app.logger.info("Key revoked", ["instance": instance.id, "key": keyID, "request": request.requestID])
        return .json(Self.render(record, current: nil))
    }

    // MARK: Helpers

    /// - Parameters: action, target: what a refused request is recorded as in the audit log.
    private func authorized(_ request: HTTPRequest, _ action: String, _ target: String) async throws(BeamsError)
        -> (InstanceConfig, AuditActor)
    {
        let instance = try app.instance(request)
        let actor = try await app.authorizeChange(request, instance, .instanceAdmin, action: action, target: target)
        try app.checkRateLimit(instance)
        return (instance, actor)
    }

    /// `{"expiresIn": "24h"}` (or an empty body: the default). - Returns: seconds.
    private func overlap(_ request: HTTPRequest) throws(BeamsError) -> TimeInterval {
        guard !request.body.isEmpty else { return RollOverlap.seconds(Self.defaultOverlap)! }
        try app.requireJSONContentType(request)
        let body = try app.jsonObject(request)
        guard let text = body["expiresIn"]?.stringValue ?? (body["expiresIn"] == nil ? Self.defaultOverlap : nil),
            let seconds = RollOverlap.seconds(text)
        else {
            throw BeamsError.schema(
                "expiresIn", "expiresIn must be now or a duration such as 1h, 24h, 7d (at most 30d)")
        }
        return seconds
    }

    private static func date(_ body: [String: JSONValue], _ field: String) throws(BeamsError) -> Date? {
        guard let value = body[field], !value.isNull else { return nil }
        guard let text = value.stringValue, let date = RFC3339.parse(text) else {
            throw BeamsError.schema(field, "\(field) must be an RFC 3339 time")
        }
        return date
    }

    func map<T>(_ body: () async throws(KeyRing.ChangeError) -> T) async throws(BeamsError) -> T {
        do {
            return try await body()
        } catch {
            switch error {
            case .keyNotFound: throw BeamsError(404, "Key not found", "Could not find a live key with this id")
            case .currentBeamsSecret:
                throw BeamsError(409, "Conflict", "The current Beams secret cannot be revoked: roll it instead")
            case .noEncryptionKey:
                throw BeamsError(
                    409, "Conflict",
                    "Rolling the Beams secret needs keys.encryptionKey in the server config")
            case .unavailable: throw app.storeUnavailable
            case .crypto(let message):
                throw BeamsError(500, "Internal Server Error", "Key generation failed: \(message)")
            }
        }
    }

    static func renderIssued(_ issued: KeyRing.Issued) -> [String: JSONValue] {
        guard case .object(var object) = render(issued.record, current: nil) else { return [:] }
        object["key"] = .string(issued.text)
        return object
    }

    /// A key without its secret or digest.
    static func render(_ key: APIKeyRecord, current: String?) -> JSONValue {
        var object: [String: JSONValue] = [
            "id": .string(key.id),
            "kind": .string(key.kind == .beams ? "beams-secret" : "scoped"),
            "label": .string(key.label),
            "scopes": .array(key.scopes.map(JSONValue.string)),
            "createdAt": .string(key.createdAt.iso8601),
            "notBefore": key.notBefore.map { .string($0.iso8601) } ?? .null,
            "expiresAt": key.expiresAt.map { .string($0.iso8601) } ?? .null,
            "lastUsedAt": key.lastUsedAt.map { .string($0.iso8601) } ?? .null,
            "revokedAt": key.revokedAt.map { .string($0.iso8601) } ?? .null,
            "rotatedFrom": key.rotatedFrom.map(JSONValue.string) ?? .null,
        ]
        if key.kind == .beams { object["current"] = .bool(key.id == current) }
        return .object(object)
    }
}
