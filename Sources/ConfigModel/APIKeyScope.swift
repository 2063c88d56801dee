/// What a key may do on its instance (docs/OPERATIONS.md, "Many apps: keys and rotation"). Every authenticated route
/// names exactly one scope; a key holding it passes, any other valid key gets 403 naming it.
package enum APIKeyScope: String, Sendable, CaseIterable, Comparable {
    /// Publishing: `POST …/publishes`, `…/interests`, `…/users`, `…/channels`; cancelling a publish; creating and
    /// deleting APNs broadcast channels; a console test push (with `console`).
    case publish
    /// Reading publishes: status, recent publishes, channel list and reads.
    case publishRead = "publish:read"
    /// The customer API: deleting a user.
    case customer
    /// Support look-ups: a device by id or token, a user's devices, an interest's subscriber count, the
    /// device-invalidation feed.
    case devicesRead = "devices:read"
    /// Signing in to the web console (its overview and test pushes).
    case console
    /// Managing the instance: its keys and Beams secret, device export and import.
    case instanceAdmin = "instance:admin"

    package static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    /// Every scope, sorted as declared.
    package static let all = Set(allCases)

    /// Parses scope names. - Returns: the unknown names instead, when any.
    package static func parse(_ names: [String]) -> Result<Set<APIKeyScope>, UnknownScopes> {
        var scopes: Set<APIKeyScope> = []
        var unknown: [String] = []
        for name in names {
            if let scope = APIKeyScope(rawValue: name) { scopes.insert(scope) } else { unknown.append(name) }
        }
        return unknown.isEmpty ? .success(scopes) : .failure(UnknownScopes(names: unknown))
    }

    /// Names that are not scopes.
    package struct UnknownScopes: Error, Sendable, CustomStringConvertible {
        package var names: [String]
        package var description: String {
            "unknown scope \(names.map { "`\($0)`" }.joined(separator: ", ")); the scopes are "
                + APIKeyScope.allCases.map(\.rawValue).joined(separator: ", ")
        }
    }
}
