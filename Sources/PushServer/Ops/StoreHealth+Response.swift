import BeamsModel
import HTTPServer
import Observability
import PushStore

/// The store's 503 in Beams' format: an HTTP answer, so it is the server's, not `Observability`'s.
extension StoreHealth {
    /// The answer to a request the store refused: 503 with `Retry-After`, in Beams' error format. The reason
    /// stays in the log and the metrics; clients only learn that nothing was stored.
    package func response(for error: StoreUnavailableError) -> HTTPResponse {
        HTTPResponse(error: BeamsError.storeUnavailable(retryAfter: retryAfterSeconds))
    }
}
