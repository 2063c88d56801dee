/// A body size limit for one route, with the error to answer when a body exceeds it.
package struct BodyLimit: Sendable {
    package var maxBytes: Int
    /// The response for a too-large body; nil means `413 {"error":"Content too large",...}`.
    package var error: HTTPError?

    /// - Parameters:
    ///   - maxBytes: largest accepted body; a larger declared Content-Length is refused without reading it.
    ///   - error: what to answer instead of the default 413.
    package init(maxBytes: Int, error: HTTPError? = nil) {
        self.maxBytes = maxBytes
        self.error = error
    }
}
