import JSON
import JWTSigner

/// Why a Google service-account file was refused. Each case names the field to fix; none carries key material.
package enum ServiceAccountError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The file could not be read: its path and the system's reason.
    case unreadableFile(path: String, reason: String)
    /// The text is not JSON.
    case notJSON(JSONParseError)
    /// The JSON is not an object.
    case notAnObject
    /// A required field is absent.
    case missingField(String)
    /// A field has the wrong JSON type: its name and the type expected.
    case wrongType(field: String, expected: String)
    /// A field has the right type but an unusable value: its name and why.
    case invalidField(field: String, reason: String)
    /// `type` is not `service_account` (e.g. `authorized_user`, a user's gcloud credentials).
    case notServiceAccount(type: String)
    /// `private_key` is not an unencrypted RSA key of at least 2048 bits.
    case privateKey(KeyLoadError)

    package var description: String {
        switch self {
        case .unreadableFile(let path, let reason): return "cannot read service-account file \(path): \(reason)"
        case .notJSON(let error): return "service-account file is not JSON: \(error)"
        case .notAnObject: return "service-account file is not a JSON object"
        case .missingField(let field): return "service-account file has no \(field)"
        case .wrongType(let field, let expected): return "service-account \(field) must be \(expected)"
        case .invalidField(let field, let reason): return "service-account \(field) is invalid: \(reason)"
        case .notServiceAccount(let type):
            return "service-account file has type \"\(type)\"; expected \"service_account\" (download a key for a "
                + "service account in the Firebase console: Project settings, Service accounts)"
        case .privateKey(let error): return "service-account private_key: \(error)"
        }
    }
}
