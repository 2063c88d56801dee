import BeamsModel
import Foundation
import JSON
import Observability

/// A server-admin key: the only credential of the server's own admin API (run-time instances, the server-wide
/// audit log). It comes from the config file (`admin.keys`) or the environment (`PUSH_SERVER_ADMIN_KEYS`), never
/// from the store, so a leaked instance key or database cannot mint one (docs/SECURITY.md, "Server-admin keys").
package struct AdminKey: Sendable, Equatable, CustomStringConvertible {
    /// Public name of the key, the audit log's actor (`admin:<id>`).
    package var id: String
    /// The key itself; compared in constant time, never logged.
    package var secret: String

    package init(id: String, secret: String) {
        self.id = id
        self.secret = secret
    }

    /// Never the secret: a key printed by mistake (a debug log of the config) shows only its id.
    package var description: String { "AdminKey(\(id))" }
}

extension ServerConfig {
    /// The environment variable holding server-admin keys: `id:key` pairs separated by commas.
    static let adminKeysVariable = "PUSH_SERVER_ADMIN_KEYS"

    /// `admin.keys`: a list of `{"id", "key" | "keyEnv" | "keyFile"}`, plus `PUSH_SERVER_ADMIN_KEYS`. Ids are 1-64
    /// letters, digits, `.`, `_`, `-`, unique; keys at least 32 bytes, as instance secrets.
    static func readAdmin(
        _ root: [String: JSONValue], into config: inout ServerConfig, _ reader: inout ConfigReader,
        environment: [String: String]
    ) {
        var keys: [AdminKey] = []
        if let admin = reader.object(root["admin"], "admin") {
            reader.checkKeys(admin, "admin", allowed: ["keys"])
            if let value = admin["keys"], !value.isNull {
                if let list = value.arrayValue {
                    for (index, element) in list.enumerated() {
                        let p = "admin.keys[\(index)]"
                        guard let object = reader.object(element, p) else {
                            if element.isNull { reader.error(p, "must be an object") }
                            continue
                        }
                        reader.checkKeys(object, p, allowed: ["id", "key", "keyEnv", "keyFile"])
                        let id = reader.string(object, "id", p)
                        if id == nil { reader.error("\(p).id", "is required") }
                        let secret = readSecret(object, p, .adminKey, &reader, environment: environment)
                        if let id, let secret { keys.append(AdminKey(id: id, secret: secret)) }
                    }
                } else {
                    reader.error("admin.keys", "must be an array")
                }
            }
        }
        if let text = environment[adminKeysVariable], !text.isEmpty {
            for pair in text.split(separator: ",") {
                let parts = pair.split(separator: ":", maxSplits: 1).map {
                    $0.trimmingCharacters(in: .whitespacesAndNewlines)
                }
                // Never the value in the message: it may be a key with a typo.
                guard parts.count == 2 else {
                    reader.error(adminKeysVariable, "each entry must be id:key (entries separated by commas)")
                    continue
                }
                if parts[1].utf8.count < minimumSecretBytes {
                    reader.error(
                        adminKeysVariable, "the key of \(parts[0]) must be at least \(minimumSecretBytes) bytes")
                    continue
                }
                keys.append(AdminKey(id: parts[0], secret: parts[1]))
            }
        }
        var seen: Set<String> = []
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        for key in keys {
            if !(1...64).contains(key.id.count) || !key.id.allSatisfy(allowed.contains) {
                reader.error("admin.keys", "key id \"\(key.id)\" must be 1 to 64 letters, digits, '.', '_' or '-'")
            } else if !seen.insert(key.id).inserted {
                reader.error("admin.keys", "duplicate key id \(key.id)")
            }
        }
        if Set(keys.map(\.secret)).count != keys.count {
            reader.error("admin.keys", "two server-admin keys are the same: give each its own")
        }
        config.admin.keys = keys
    }
}
