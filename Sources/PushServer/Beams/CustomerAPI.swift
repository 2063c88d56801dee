import BeamsModel
import HTTPServer
import Logging
import PushStore

/// `DELETE /customer_api/v1/instances/{id}/users/{userId}` and the legacy `/user_api/v1/…` alias (Node SDK):
/// removes the user and every device of theirs.
struct CustomerAPI: Sendable {
    let app: AppContext

    func register(into router: inout Router) {
        // The user id is the rest of the path: the Python SDK leaves `/` unescaped (docs/BEAMS-PROTOCOL.md §3).
        router.delete("/customer_api/v1/instances/:instance/users/*user", bodyLimit: .noBody) {
            try await deleteUser($0)
        }
        router.delete("/user_api/v1/instances/:instance/users/*user", bodyLimit: .noBody) { try await deleteUser($0) }
    }

    func deleteUser(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        let user = Self.userID(request)
        let actor = try await app.authorizeChange(
            request, instance, .customer, action: "user.delete",
            target: String(user.prefix(PublishRequest.maxUserIDBytes)))
        try app.checkRateLimit(instance)
        guard user.utf8.count <= PublishRequest.maxUserIDBytes else {
            throw BeamsError(400, "Bad request", "'User id' is too long, max length is 164")
        }
        let removed = try await app.deviceRegistry.deleteUser(
            instanceID: instance.id, userID: user, audit: actor.entry(instance.id, "user.delete", user, at: app.now()))
        app.logger.info("User deleted", ["devices": String(removed), "request": request.requestID])
        return .emptyOK
    }

    /// The `X-Pusher-Library` prefixes of the SDKs that build the path with a form encoder (`+` for a space, `%2B`
    /// for a plus): Java `URLEncoder.encode`, PHP `urlencode`, Ruby `CGI.escape` (docs/API.md, Customer API).
    static let formEncodingLibraries = [
        "pusher-push-notifications-server-java", "pusher-push-notifications-php", "pusher-push-notifications-ruby",
    ]

    /// The user id: the rest of the path after `users/`, percent-decoded. A `+` is a space when the request comes
    /// from a form-encoding SDK, else a literal `+` (Python, Node and Go escape or keep a plus as RFC 3986 says).
    static func userID(_ request: HTTPRequest) -> String {
        let library = request.headers.first("x-pusher-library")?.lowercased() ?? ""
        if formEncodingLibraries.contains(where: { library.hasPrefix($0) }),
            // `/{family}/v1/instances/{id}/users/` is five segments; the route matched, so a sixth exists.
            let decoded = request.formDecodedPath(fromSegment: 5)
        {
            return decoded
        }
        return request.parameters["user"] ?? ""
    }
}
