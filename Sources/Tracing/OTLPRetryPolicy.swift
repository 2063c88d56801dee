import HTTPClient
import JSON

/// What an OTLP/HTTP export attempt's answer means (OTLP specification, "OTLP/HTTP Response"): 2xx is done (with
/// the spans a `partialSuccess` says were rejected, never retried); 429, 502, 503 and 504 and a lost connection
/// or timeout are retried after `Retry-After` (seconds or an HTTP date) or an exponential backoff; every other
/// status is final. A retry that would end past the export's deadline is not made. Pure: the exporter performs it.
package enum OTLPRetryPolicy {
    package enum Decision: Sendable, Equatable {
        /// Accepted; `rejected` spans were refused by the receiver (partial success) and are dropped.
        case done(rejected: Int)
        /// Send the same body again after this many seconds.
        case retry(after: Double)
        /// Give up; `reason` is the metric label (`http_400`, `http_503`, `timeout`, `connection`, …).
        case failed(reason: String)
    }

    /// The statuses worth another attempt.
    package static let retryableStatuses: Set<Int> = [429, 502, 503, 504]
    /// The first backoff without `Retry-After`; doubles per attempt up to `maxBackoff`.
    package static let initialBackoff = 1.0
    package static let maxBackoff = 5.0

    /// - Parameters:
    ///   - attempt: 1 for the first attempt.
    ///   - remaining: seconds left before the export's deadline.
    ///   - nowUnix: wall time, for a `Retry-After` date.
    ///   - jitter: 0..<1, spreads the backoff (0.5 to 1 times the nominal delay).
    package static func decide(
        _ result: HTTPExchangeResult, attempt: Int, remaining: Double, nowUnix: Int,
        jitter: Double
    ) -> Decision {
        let reason: String
        var delay: Double?
        switch result {
        case .success(let response):
            if (200..<300).contains(response.status) { return .done(rejected: rejectedSpans(response.body)) }
            reason = "http_\(response.status)"
            guard retryableStatuses.contains(response.status) else { return .failed(reason: reason) }
            if let header = response.retryAfter, let seconds = RetryAfter.seconds(header, now: nowUnix) {
                delay = Double(seconds)
            }
        case .failure(let error):
            reason = error.kind.rawValue
            guard error.kind == .connection || error.kind == .timeout else { return .failed(reason: reason) }
        }
        let backoff = min(maxBackoff, initialBackoff * Double(1 << min(max(attempt - 1, 0), 10)))
        let wait = delay ?? backoff * (0.5 + 0.5 * min(max(jitter, 0), 1))
        guard wait < remaining else { return .failed(reason: reason) }
        return .retry(after: wait)
    }

    /// `partialSuccess.rejectedSpans` of an `ExportTraceServiceResponse` (a string or a number), 0 when absent.
    static func rejectedSpans(_ body: [UInt8]) -> Int {
        guard !body.isEmpty, let partial = JSONValue.parse(body)?["partialSuccess"] else { return 0 }
        if let number = partial["rejectedSpans"]?.intValue { return max(0, number) }
        return partial["rejectedSpans"]?.stringValue.flatMap { Int($0) }.map { max(0, $0) } ?? 0
    }
}
