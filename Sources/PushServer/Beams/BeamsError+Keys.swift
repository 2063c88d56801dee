/// The answers to a refused API key: built from the key types, which belong to the server, not to the Beams model.
import BeamsModel
import ConfigModel

extension BeamsError {
    /// A valid key without the route's scope (docs/SECURITY.md, "API keys").
    static func missingScope(_ scope: APIKeyScope) -> BeamsError {
        BeamsError(403, "Forbidden", "This key lacks the `\(scope.rawValue)` scope")
    }
    /// 401 for a refused key. The Beams secret's wording stays Beams'; a scoped key that matched says why it no
    /// longer works (only its holder can get that far).
    static func rejectedKey(_ verdict: KeyVerdict, scoped: Bool) -> BeamsError {
        switch verdict {
        case .revoked: return BeamsError(401, "Unauthorized", "API key revoked")
        case .expired: return BeamsError(401, "Unauthorized", "API key expired")
        case .notYetValid: return BeamsError(401, "Unauthorized", "API key not valid yet")
        default: return scoped ? BeamsError(401, "Unauthorized", "Incorrect API Key") : incorrectSecret
        }
    }
}
