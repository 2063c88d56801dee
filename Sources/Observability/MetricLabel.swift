import PushStore

/// Label values for `/metrics`, each from a fixed set with an `other` overflow, so that no client (or peer) can
/// add a series: a request line with a random 2,000-byte method, or an APNs answer with an invented status or
/// reason, lands in `other` instead of a new series (docs/OPERATIONS.md, "Health and metrics").
package enum MetricLabel {
    package static let other = Metrics.overflowLabelValue

    /// The methods the server routes, plus `-` for a request rejected before its method was read.
    static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "-"]

    /// A request method as a label: one of `methods`, else `other`. Methods are case-sensitive (RFC 9110 §9.1),
    /// so `get` is `other` too.
    package static func method(_ raw: String) -> String {
        methods.contains(raw) ? raw : other
    }

    /// Statuses the server answers and APNs documents (0: nothing was sent), shown as themselves.
    package static let statuses: Set<Int> = [
        0, 100, 200, 201, 202, 204, 400, 401, 403, 404, 405, 408, 410, 413, 414, 417, 422, 429, 431,
        500, 501, 502, 503, 504, 505,
    ]

    /// A status as a label: itself when in `statuses`, else its class (`2xx` … `5xx`), else `other`.
    package static func status(_ code: Int) -> String {
        if statuses.contains(code) { return String(code) }
        if (100...599).contains(code) { return "\(code / 100)xx" }
        return other
    }

    /// A platform as a label (three values).
    package static func platform(_ platform: Platform) -> String { platform.rawValue }
    // The outcome reasons (`reasons`, `reason(_:)`) are the engine's: PushServer's MetricLabel+Reasons.swift.
}
