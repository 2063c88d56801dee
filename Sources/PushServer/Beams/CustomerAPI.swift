import HTTPServer
import Logging
import PushStore

/// `DELETE /customer_api/v1/instances/{id}/users/{userId}` and the legacy `/user_api/v1/…` alias (Node SDK):
/// removes the user and every device of theirs.
struct CustomerAPI: Sendable {
    let app: AppContext

    func register(into router: inout Router) {
        // The user id is the rest of the path: the Python SDK leaves `/` unescaped (docs/beams-api.md §3).
        router.delete("/customer_api/v1/instances/:instance/users/*user") { try await deleteUser($0) }
        router.delete("/user_api/v1/instances/:instance/users/*user") { try await deleteUser($0) }
    }

    func deleteUser(_ request: HTTPRequest) async throws -> HTTPResponse {
        let instance = try app.instance(request)
        try app.authorizeSecret(request, instance)
        try app.checkRateLimit(instance)
        let user = request.parameters["user"] ?? ""
        guard user.utf8.count <= PublishRequest.maxUserIDBytes else {
            throw BeamsError(400, "Bad request", "'User id' is too long, max length is 164")
        }
        let removed = try await app.store.deleteUser(instanceID: instance.id, userID: user)
        app.logger.info("User deleted", ["devices": String(removed), "request": request.requestID])
        return .emptyOK
    }
}
