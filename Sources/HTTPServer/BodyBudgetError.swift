/// `503` with `Retry-After: 1`: the server-wide budget for request bodies in flight (`HTTPLimits
/// .maxBodyBytesInFlight`), or this address's share of it, is spent. Answered when the request head arrives,
/// before the body is read; the request can be sent again in a moment.
struct BodyBudgetError: HTTPResponseError {
    var status: HTTPStatus { .serviceUnavailable }
    var title: String { "Service unavailable" }
    var description: String { "Too many request bodies in flight; retry later" }
    var responseHeaders: HTTPHeaders { ["Retry-After": "1"] }
}
