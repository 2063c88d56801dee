import BeamsModel
import ConfigModel
import HTTPServer
import PublishEngine

/// CORS for the anonymous device and reporting APIs, which the Beams Web SDK calls with `fetch` from the
/// customer's page or service worker, another origin (docs/API.md, "Browsers"). Never used on the publish,
/// customer or admin APIs: a browser has no business holding an instance's secret key.
///
/// Every answer of these routes carries `Access-Control-Allow-Origin`, errors included (admission refusals, 404s,
/// 503s, body-limit errors), or the SDK sees an opaque network error instead of `error` and `description`.
/// Which origins are allowed is the instance's `web.allowedOrigins` (default any); an unknown instance answers
/// as "any", since its 404/400 reveals nothing an origin check would protect.
struct CORSPolicy: Sendable {
    /// The instances served now (run-time ones come and go).
    let instances: InstanceDirectory

    /// How long a browser may cache a preflight answer. Chromium caps it at 2 hours, Firefox at 24.
    static let maxAgeSeconds = 7200
    static let allowMethods = "GET, POST, PUT, DELETE"
    /// `Content-Type: application/json` and `Authorization` (the user JWT on `PUT …/user`) are all the SDK sends.
    static let allowHeaders = "Content-Type, Authorization"

    /// The response hook of every route it covers (`HTTPResponseHook`).
    func decorate(_ request: HTTPRequest, _ response: inout HTTPResponse) {
        let origins = request.parameters["instance"].flatMap { instances.config($0) }?.allowedOrigins ?? .any
        switch origins {
        case .any:
            response.headers.replaceOrAdd("Access-Control-Allow-Origin", "*")
        case .only(let allowed):
            // The answer depends on the Origin header: caches must key on it.
            response.headers.replaceOrAdd("Vary", "Origin")
            // Only a configured value is ever echoed, never the client's bytes.
            if let origin = request.headers.first("origin")?.lowercased(),
                let match = allowed.first(where: { $0 == origin })
            {
                response.headers.replaceOrAdd("Access-Control-Allow-Origin", match)
            } else {
                response.headers.remove("Access-Control-Allow-Origin")
            }
        }
    }

    /// Refuses a request sent from a browser page the instance does not allow: with a restricted
    /// `web.allowedOrigins`, a request whose `Origin` header is present and not on the list gets 403 before its body
    /// is read. Hiding the answer (no `Access-Control-Allow-Origin`) is not enough: a `text/plain` or body-less
    /// `POST` is a "simple" request that the browser sends without a preflight, so the write would happen anyway.
    /// Native SDKs send no `Origin` and pass; so does every request to an instance that allows any origin.
    static func checkOrigin(_ request: HTTPRequest, _ instance: InstanceConfig) throws(BeamsError) {
        guard case .only(let allowed) = instance.allowedOrigins, let origin = request.headers.first("origin") else {
            return
        }
        let lowered = origin.lowercased()
        guard allowed.contains(where: { $0 == lowered }) else { throw .originNotAllowed }
    }

    /// `OPTIONS`: 204 with the allowed methods and headers. A refused origin gets the same answer without
    /// `Access-Control-Allow-Origin`, so the browser stops there. Answered on the event loop and not rate limited:
    /// it reads only memory, so answering costs no more than refusing would.
    func preflight(_ request: HTTPRequest) -> HTTPResponse {
        var response = HTTPResponse.empty(status: .noContent)
        response.headers.add("Access-Control-Allow-Methods", Self.allowMethods)
        response.headers.add("Access-Control-Allow-Headers", Self.allowHeaders)
        response.headers.add("Access-Control-Max-Age", String(Self.maxAgeSeconds))
        decorate(request, &response)
        return response
    }

    /// Adds the `OPTIONS` route for each pattern (the other methods' routes take `decorate` as their hook).
    func registerPreflights(_ patterns: [String], into router: inout Router) {
        let policy = self
        for pattern in patterns {
            router.add(.options, pattern, bodyLimit: .noBody, onEventLoop: { request in policy.preflight(request) })
        }
    }
}
