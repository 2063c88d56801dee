import Clocks
import Foundation
import HTTPClient
import Logging

/// Sends batches of spans to an OTLP/HTTP JSON endpoint (`…/v1/traces`) on the process's one HTTP client stack
/// (`HTTPExchangeClient`, its own loop thread `otlp-0`), retrying as `OTLPRetryPolicy` says. Retries are
/// scheduled on the client's loop (no thread sleeps); the batch processor waits for the outcome before it sends
/// the next batch, so exports are never concurrent.
package final class OTLPExporter: Sendable {
    /// Told what happened to every batch: the `/metrics` counters.
    package struct Counters: Sendable {
        package var exported: @Sendable (Int) -> Void
        /// Spans not delivered, by reason (`export_failed`, `rejected`).
        package var dropped: @Sendable (_ reason: String, _ count: Int) -> Void
        /// An export that failed for good (after its retries), by reason (`http_400`, `http_503`, `connection`, …).
        package var failure: @Sendable (_ reason: String) -> Void
        /// An attempt answered with a retryable failure and sent again, by the same reasons.
        package var retry: @Sendable (_ reason: String) -> Void

        package init(
            exported: @escaping @Sendable (Int) -> Void, dropped: @escaping @Sendable (String, Int) -> Void,
            failure: @escaping @Sendable (String) -> Void, retry: @escaping @Sendable (String) -> Void
        ) {
            self.exported = exported
            self.dropped = dropped
            self.failure = failure
            self.retry = retry
        }

        package static let none = Counters(exported: { _ in }, dropped: { _, _ in }, failure: { _ in }, retry: { _ in })
    }

    private let client: HTTPExchangeClient
    private let url: HTTPURL
    private let headers: [String]
    private let encoder: OTLPJSONEncoder
    private let exportTimeout: Duration
    private let counters: Counters
    private let logger: Logger

    /// - Throws: `CurlError` when libcurl cannot start its loop.
    package init(configuration: TracingConfiguration, encoder: OTLPJSONEncoder, counters: Counters, logger: Logger)
        throws(CurlError)
    {
        client = try HTTPExchangeClient(
            configuration: HTTPExchangeConfiguration(
                name: "otlp", connections: 1, http2: true, httpsOnly: false, caFile: configuration.caFile,
                timeout: configuration.requestTimeout, connectTimeout: .seconds(5), maxResponseBytes: 4 << 20))
        url = configuration.endpoint
        var lines = [
            "Content-Type: application/json", "User-Agent: push-server-otlp-json/\(encoder.scopeVersion) (Swift)",
        ]
        lines += configuration.headers.map { "\($0.name): \($0.value)" }
        headers = lines
        self.encoder = encoder
        exportTimeout = configuration.batch.exportTimeout
        self.counters = counters
        self.logger = logger
    }

    /// Sends `spans`, retrying within the export timeout; `done` runs once, on a loop thread, when it ended.
    package func export(_ spans: [SpanData], done: @escaping @Sendable () -> Void) {
        guard !spans.isEmpty else { return done() }
        let exchange = HTTPExchange(url: url, headers: headers, body: encoder.encode(spans))
        let deadline = MonotonicClock.now() &+ exportTimeout.nanoseconds
        attempt(exchange, count: spans.count, number: 1, delay: 0, deadline: deadline, done: done)
    }

    private func attempt(
        _ exchange: HTTPExchange, count: Int, number: Int, delay: Double, deadline: UInt64,
        done: @escaping @Sendable () -> Void
    ) {
        client.submit(exchange, after: delay) { [self] result in
            let now = MonotonicClock.now()
            let remaining = now < deadline ? Double(deadline - now) / 1e9 : 0
            let decision = OTLPRetryPolicy.decide(
                result, attempt: number, remaining: remaining,
                nowUnix: Int(Date().timeIntervalSince1970),
                jitter: Double.random(in: 0..<1))
            switch decision {
            case .done(let rejected):
                counters.exported(count - rejected)
                if rejected > 0 {
                    counters.dropped("rejected", rejected)
                    logger.notice("The trace receiver rejected spans", ["rejected": String(rejected)])
                }
                done()
            case .retry(let after):
                switch result {
                case .success(let response): counters.retry("http_\(response.status)")
                case .failure(let error): counters.retry(error.kind.rawValue)
                }
                attempt(exchange, count: count, number: number + 1, delay: after, deadline: deadline, done: done)
            case .failed(let reason):
                if case .failure(let error) = result, error.kind == .shutdown { return done() }
                counters.failure(reason)
                counters.dropped("export_failed", count)
                logger.notice(
                    "Exporting spans failed",
                    [
                        "reason": reason, "spans": String(count),
                        "attempts": String(number), "endpoint": url.redacted,
                    ])
                done()
            }
        }
    }

    /// Aborts a waiting retry and stops the loop thread.
    package func shutdown() async { await client.shutdown() }
}
