import BeamsModel
import HTTPServer

/// The paging of a listing read oldest first by a sequence number (the audit log, the invalidation feed):
/// `since`, the cursor an earlier page gave (none: from the oldest), and `limit`, the page size (default 100, at
/// most 1,000). A bad value is 400, naming the parameter.
struct PageQuery: Sendable, Equatable {
    static let defaultLimit = 100
    static let maxLimit = 1000

    /// Entries after this sequence number.
    var since: Int64
    var limit: Int

    /// `since` and `limit` from the request's query.
    init(_ request: HTTPRequest) throws(BeamsError) {
        try self.init(since: request.queryValue("since"), limit: request.queryValue("limit"))
    }

    init(since: String?, limit: String?) throws(BeamsError) {
        self.since = 0
        if let since {
            // Digits only (no sign, no spaces), at most an Int64's.
            guard !since.isEmpty, since.utf8.count <= 19, since.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let value = Int64(since)
            else {
                throw BeamsError(400, "Bad request", "`since` must be a cursor from an earlier page")
            }
            self.since = value
        }
        self.limit = Self.defaultLimit
        if let limit {
            guard let value = Int(limit), (1...Self.maxLimit).contains(value) else {
                throw BeamsError(400, "Bad request", "`limit` must be a number between 1 and \(Self.maxLimit)")
            }
            self.limit = value
        }
    }
}
