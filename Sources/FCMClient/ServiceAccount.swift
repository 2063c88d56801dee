import JSON
import JWTSigner

/// A Google service account as its JSON key file describes it: who signs the OAuth2 assertion (`client_email`,
/// `private_key_id`, `private_key`), where to send it (`token_uri`) and which Firebase project to send to
/// (`project_id`). Other members of the file (`client_id`, `auth_uri`, certificate URLs, …) are ignored.
///
/// The private key is parsed once; `description` never shows it.
package struct ServiceAccount: Sendable, CustomStringConvertible {
    /// The Firebase/Google Cloud project id: the `{project}` of `projects/{project}/messages:send`.
    package let projectID: String
    /// The key's id, sent as the assertion's `kid` so Google picks the right public key.
    package let privateKeyID: String
    /// The account's e-mail address: the assertion's `iss`.
    package let clientEmail: String
    /// The OAuth2 token endpoint, normally `https://oauth2.googleapis.com/token`: the assertion's `aud`.
    package let tokenURI: String
    /// The RSA signing key.
    package let privateKey: RS256PrivateKey

    /// Largest file read: a real one is about 2.3 KB.
    package static let maxFileSize = 64 * 1024
    /// Longest accepted `project_id`, `private_key_id`, `client_email` or `token_uri`.
    static let maxFieldLength = 512

    /// Parses the JSON text of a service-account key file.
    package init(json bytes: [UInt8]) throws(ServiceAccountError) {
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes, limits: JSONLimits(maxDepth: 8, maxBytes: Self.maxFileSize))
        } catch {
            throw .notJSON(error)
        }
        guard let members = value.objectValue else { throw .notAnObject }

        func string(_ field: String) throws(ServiceAccountError) -> String {
            guard let member = members[field] else { throw .missingField(field) }
            guard let text = member.stringValue else { throw .wrongType(field: field, expected: "a string") }
            if text.isEmpty { throw .invalidField(field: field, reason: "empty") }
            return text
        }
        func identifier(_ field: String) throws(ServiceAccountError) -> String {
            let text = try string(field)
            if text.utf8.count > Self.maxFieldLength {
                throw .invalidField(field: field, reason: "longer than \(Self.maxFieldLength) bytes")
            }
            // These go into a URL path, a JWT and log lines: printable ASCII without spaces only.
            if let bad = text.utf8.first(where: { $0 <= 0x20 || $0 >= 0x7F }) {
                throw .invalidField(
                    field: field, reason: "contains the byte 0x\(String(bad, radix: 16)); expected printable ASCII")
            }
            return text
        }

        let type = try string("type")
        guard type == "service_account" else { throw .notServiceAccount(type: type) }
        projectID = try identifier("project_id")
        guard Self.isValidProjectID(projectID) else {
            throw .invalidField(
                field: "project_id", reason: "only lower-case letters, digits, '-', '.' and ':' are allowed")
        }
        privateKeyID = try identifier("private_key_id")
        clientEmail = try identifier("client_email")
        guard clientEmail.utf8.contains(UInt8(ascii: "@")) else {
            throw .invalidField(field: "client_email", reason: "not an e-mail address")
        }
        tokenURI = try identifier("token_uri")
        guard tokenURI.lowercased().hasPrefix("https://"), tokenURI.utf8.count > "https://".utf8.count else {
            throw .invalidField(field: "token_uri", reason: "must be an https:// URL")
        }
        let pem = try string("private_key")
        do {
            privateKey = try RS256PrivateKey(pem: pem)
        } catch {
            throw .privateKey(error)
        }
    }

    /// Whether `text` can be a project id: Google's are lower-case letters, digits and hyphens; old
    /// "domain.com:project" ids add '.' and ':'. Nothing else may reach the request path.
    package static func isValidProjectID(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= maxFieldLength && text.utf8.allSatisfy(projectIDBytes.contains)
    }

    private static let projectIDBytes = Set("abcdefghijklmnopqrstuvwxyz0123456789-.:".utf8)

    /// Reads and parses a service-account key file.
    package init(contentsOfFile path: String) throws(ServiceAccountError) {
        let bytes: [UInt8]
        do {
            bytes = try KeyFile.read(path, maxSize: Self.maxFileSize, kind: "a service-account file")
        } catch {
            guard case .unreadableFile(let path, let reason) = error else {
                throw .unreadableFile(path: path, reason: "\(error)")
            }
            throw .unreadableFile(path: path, reason: reason)
        }
        try self.init(json: bytes)
    }

    /// Never shows the key.
    package var description: String {
        "ServiceAccount(project: \(projectID), client: \(clientEmail), key id: \(privateKeyID))"
    }
}
