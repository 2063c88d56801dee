import Foundation
import HTTPClient
import JSON
import Logging
import PushStore

// Secrets (inline, from an environment variable or a file) and file paths (readable, `${VAR}` expanded).
extension ServerConfig {
    /// The field names of the three ways to give a secret (inline, an environment variable's name, a file path),
    /// whether one is required, and the shortest value accepted.
    struct SecretKeys {
        var inline: String
        var env: String
        var file: String
        var required = true
        /// Instance secrets and the ops token guard the server against guessing: shorter ones are refused. A
        /// webhook secret is the receiver's choice (Beams sets no minimum).
        var minimumBytes = minimumSecretBytes
        /// A PostgreSQL connection string is a secret only when it holds a password (`exposureIssues`).
        var secretOnlyWithPassword = false

        static let instance = SecretKeys(inline: "secretKey", env: "secretKeyEnv", file: "secretKeyFile")
        static let webhook = SecretKeys(inline: "secret", env: "secretEnv", file: "secretFile", minimumBytes: 1)
        static let keyEncryption = SecretKeys(
            inline: "encryptionKey", env: "encryptionKeyEnv",
            file: "encryptionKeyFile", required: false)
        static let adminKey = SecretKeys(inline: "key", env: "keyEnv", file: "keyFile")
        static let opsToken = SecretKeys(inline: "token", env: "tokenEnv", file: "tokenFile", required: false)
        /// The PostgreSQL connection string (it may hold a password): any length.
        static let postgreSQL = SecretKeys(
            inline: "connectionString", env: "connectionStringEnv",
            file: "connectionStringFile", minimumBytes: 1, secretOnlyWithPassword: true)
    }

    /// Secrets shorter than this are refused: they would be guessable.
    static let minimumSecretBytes = 32

    static func readSecret(
        _ object: [String: JSONValue], _ p: String, _ fields: SecretKeys, _ reader: inout ConfigReader,
        environment: [String: String]
    ) -> String? {
        let inline = reader.string(object, fields.inline, p)
        let env = reader.string(object, fields.env, p)
        let file = reader.string(object, fields.file, p).map { expandVariables($0, environment) }
        let given = [inline, env, file].compactMap { $0 }.count
        if given == 0 && !fields.required { return nil }
        guard given == 1 else {
            reader.error(
                "\(p).\(fields.inline)",
                given == 0
                    ? "one of \(fields.inline), \(fields.env) or \(fields.file) is required"
                    : "give only one of \(fields.inline), \(fields.env) or \(fields.file)")
            return nil
        }
        var secret: String
        var field = "\(p).\(fields.inline)"
        if let inline {
            secret = inline
            if !fields.secretOnlyWithPassword || holdsPassword(inline) { reader.secret(field, file: nil) }
        } else if let env {
            field = "\(p).\(fields.env)"
            guard let value = environment[env] else {
                reader.error(field, "environment variable \(env) is not set")
                return nil
            }
            secret = value
        } else if let file {
            field = "\(p).\(fields.file)"
            guard let data = FileManager.default.contents(atPath: file), let text = String(data: data, encoding: .utf8)
            else {
                reader.error(
                    field,
                    FileManager.default.fileExists(atPath: file)
                        ? "cannot be read (\(file))" : "file not found (\(file))")
                return nil
            }
            secret = text
            reader.secret(field, file: file)
        } else {
            return nil
        }
        // Files and env vars often end with a newline that is not part of the secret.
        secret = secret.trimmingCharacters(in: .whitespacesAndNewlines)
        if secret.isEmpty {
            reader.error(field, "the secret is empty")
            return nil
        }
        if secret.utf8.count < fields.minimumBytes {
            reader.error(
                field,
                "the secret must be at least \(fields.minimumBytes) bytes; generate one with "
                    + "`head -c 32 /dev/urandom | base64`")
            return nil
        }
        return secret
    }

    /// Whether a libpq connection string carries a password (`password=…` or `scheme://user:password@host`).
    package static func holdsPassword(_ connectionString: String) -> Bool {
        let lowered = connectionString.lowercased()
        if lowered.contains("password") { return true }
        guard let scheme = lowered.range(of: "://") else { return false }
        let authority = lowered[scheme.upperBound...].prefix { $0 != "/" }
        guard let at = authority.lastIndex(of: "@") else { return false }
        return authority[..<at].contains(":")
    }

    @discardableResult
    static func checkReadable(_ path: String, _ field: String, _ reader: inout ConfigReader) -> Bool {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            reader.error(field, "file not found (\(path))")
            return false
        }
        if isDirectory.boolValue {
            reader.error(field, "is a directory, not a file (\(path))")
            return false
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            reader.error(field, "file is not readable (\(path))")
            return false
        }
        return true
    }

    /// Expands `${NAME}` from the environment (unknown names expand to nothing, and the path check then names
    /// the resulting path).
    static func expandVariables(_ value: String, _ environment: [String: String]) -> String {
        guard value.contains("${") else { return value }
        var result = ""
        var rest = Substring(value)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                result += rest[start.lowerBound...]
                return result
            }
            result += environment[String(rest[start.upperBound..<end])] ?? ""
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }
}
