/// Why an `HTTPExchange` (a webhook, an FCM or Web Push message, an APNs broadcast call) got no HTTP response: the
/// one error type of the one outbound HTTP stack. Small and typed: `kind` is a bounded metric label (the webhook
/// failure reasons of docs/OPERATIONS.md), `message` says what happened without credentials (URLs appear only as
/// `HTTPURL.redacted`).
package struct HTTPExchangeError: Error, Sendable, Equatable, CustomStringConvertible {
    package enum Kind: String, Sendable, CaseIterable {
        /// Not an http or https URL libcurl accepts.
        case invalidURL = "invalid_url"
        /// Every address the host resolved to is refused by the `DestinationPolicy`: nothing was sent.
        case refusedDestination = "refused_destination"
        /// No complete answer within the time limit (connect or total).
        case timeout
        /// The response (headers and body) grew past the size cap; the transfer was aborted.
        case responseTooLarge = "response_too_large"
        /// DNS, TCP, TLS or HTTP framing failed.
        case connection
        /// The client was shut down before the answer.
        case shutdown
        /// libcurl refused an option or ran out of memory.
        case internalError = "internal"
    }

    package var kind: Kind
    package var message: String

    package init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    package var description: String { "\(kind.rawValue): \(message)" }
}
