@testable import HTTPServer

/// Drives a `RequestParser` over a byte string the way the server does, collecting what it produced.
struct ParseOutcome {
    var heads: [RequestHead] = []
    var bodies: [[UInt8]] = []
    var trailers: [HTTPHeaders] = []
    var error: HTTPParseError?
    /// `beginBody` answered `.read` for a request that asked for 100-continue.
    var continueSent = 0

    var status: Int? { error?.status.code }
}

func parse(
    _ text: String, bodyLimit: Int = 1 << 20, limits: RequestParser.Limits = .init(),
    chunkSizes: [Int]? = nil
) -> ParseOutcome {
    parse(Array(text.utf8), bodyLimit: bodyLimit, limits: limits, chunkSizes: chunkSizes)
}

/// - Parameter chunkSizes: feed the bytes in pieces of these sizes (cycled) instead of all at once.
func parse(
    _ bytes: [UInt8], bodyLimit: Int = 1 << 20, limits: RequestParser.Limits = .init(),
    chunkSizes: [Int]? = nil
) -> ParseOutcome {
    var parser = RequestParser(limits: limits)
    var outcome = ParseOutcome()
    var offset = 0
    var sizeIndex = 0
    func drain() -> Bool {
        while true {
            switch parser.next() {
            case .needMoreData: return true
            case .head(let head):
                outcome.heads.append(head)
                switch parser.beginBody(limit: bodyLimit) {
                case .tooLarge:
                    outcome.error = HTTPParseError.bodyTooLarge
                    return false
                case .read:
                    if head.expectsContinue { outcome.continueSent += 1 }
                case .noBody: break
                }
            case .body(let body, let trailers):
                outcome.bodies.append(body)
                outcome.trailers.append(trailers)
            case .error(let error):
                outcome.error = error
                return false
            }
        }
    }
    while offset < bytes.count {
        var size = bytes.count - offset
        if let sizes = chunkSizes, !sizes.isEmpty {
            size = max(1, min(size, sizes[sizeIndex % sizes.count]))
            sizeIndex += 1
        }
        parser.append(Array(bytes[offset..<offset + size]))
        offset += size
        if !drain() { return outcome }
    }
    return outcome
}
