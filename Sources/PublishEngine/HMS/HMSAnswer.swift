import JSON

/// What Huawei's `messages:send` answer means for one batch of tokens (result codes per docs/API.md "Huawei Push
/// Kit"). A pure function of the HTTP status and body, tested without sockets.
package enum HMSAnswer: Equatable {
    /// 80000000: every token accepted.
    case success
    /// 80100000: the tokens listed in `msg`'s `illegal_tokens` failed, every other one was accepted.
    case partial(illegalTokens: Set<String>)
    /// 80300007: every token of the request is invalid.
    case allTokensInvalid
    /// 80200001/80200003 or HTTP 401: the access token is expired or not this app's; refresh and resend once.
    case accessTokenRejected(code: String)
    /// HTTP 503 (Huawei's flow control), 502, 5xx or 81000001: back off and resend the same tokens.
    case retry(reason: String, retryAfter: Double?)
    /// Any other code: a final failure of the whole batch, the tokens kept.
    case failed(reason: String)

    static let successCode = "80000000"
    static let partialSuccessCode = "80100000"

    static func classify(status: Int, body: [UInt8], retryAfter: String? = nil) -> HMSAnswer {
        let object = JSONValue.parse(body)?.objectValue
        let code = object?["code"]?.stringValue ?? object?["code"]?.intValue.map(String.init)
        if status == 503 || status == 502 || (status >= 500 && code == nil) {
            return .retry(reason: "HTTP\(status)", retryAfter: retryAfter.flatMap(Double.init))
        }
        if status == 401 { return .accessTokenRejected(code: code ?? "HTTP401") }
        guard let code else { return .failed(reason: status == 200 ? "UnknownError" : "HTTP\(status)") }
        switch code {
        case successCode:
            return .success
        case partialSuccessCode:
            return .partial(illegalTokens: illegalTokens(object?["msg"]))
        case "80200001", "80200003":
            return .accessTokenRejected(code: code)
        case "80300007":
            return .allTokensInvalid
        case "81000001":
            return .retry(reason: code, retryAfter: nil)
        default:
            return .failed(reason: knownCodes.contains(code) ? code : "UnknownError")
        }
    }

    /// `msg` of an 80100000 answer: JSON text `{"success":n,"failure":m,"illegal_tokens":[…]}` (some answers carry
    /// it as an object). Tokens that are not strings are skipped.
    static func illegalTokens(_ msg: JSONValue?) -> Set<String> {
        var object = msg?.objectValue
        if object == nil, let text = msg?.stringValue { object = JSONValue.parse(Array(text.utf8))?.objectValue }
        let list = object?["illegal_tokens"]?.arrayValue ?? object?["illegalTokens"]?.arrayValue ?? []
        return Set(list.compactMap(\.stringValue))
    }

    /// Result codes kept as a failure reason; others become `UnknownError`, so a broken answer cannot grow a
    /// publish's counters.
    static let knownCodes: Set<String> = [
        "80100001", "80100002", "80100003", "80100004", "80100013", "80100016", "80100017", "80100018",
        "80200001", "80200003", "80300002", "80300007", "80300008", "80300010", "80300011", "80600003", "81000001",
    ]
}
