import Logging

/// Renders a response head and body into wire bytes. Pure; used by the loop right before writing.
enum ResponseSerializer {
    /// Headers the server owns; a handler's values for them are dropped.
    private static func isServerOwned(_ name: String) -> Bool {
        // First-letter filter: most handler headers (X-…, Allow, Location) are ruled out by one byte compare.
        guard let first = name.utf8.first.map(ASCII.lower),
            first == UInt8(ascii: "c") || first == UInt8(ascii: "d") || first == UInt8(ascii: "t")
                || first == UInt8(ascii: "k")
        else { return false }
        return HTTPHeaders.equalsIgnoringCase(name, "content-length") || HTTPHeaders.equalsIgnoringCase(name, "date")
            || HTTPHeaders.equalsIgnoringCase(name, "connection")
            || HTTPHeaders.equalsIgnoringCase(name, "transfer-encoding")
            || HTTPHeaders.equalsIgnoringCase(name, "keep-alive")
    }

    /// - Parameters:
    ///   - omitBody: HEAD requests get the GET headers (including its Content-Length) without the body.
    ///   - keepAlive: false adds `Connection: close`; for HTTP/1.0 clients true adds `Connection: keep-alive`.
    ///   - headerCache: the loop's `HeaderBlockCache`: a handler's header fields checked and rendered once when the
    ///     same fields come again (a response built once and returned for every request, like `/health`'s).
    static func serialize(
        _ response: HTTPResponse, into out: inout [UInt8], date: [UInt8], omitBody: Bool,
        keepAlive: Bool, minorVersion: Int, requestID: String?, serverName: String?,
        headerCache: HeaderBlockCache? = nil
    ) {
        let status = response.status
        append("HTTP/1.1 ", to: &out)
        LogLineEncoder.appendDecimal(status.code, to: &out)
        out.append(ASCII.space)
        appendString(status.reasonPhrase, to: &out)
        append("\r\nDate: ", to: &out)
        out.append(contentsOf: date)
        append("\r\n", to: &out)
        if let serverName {
            appendField("Server", serverName, to: &out)
        }
        let hasRequestID: Bool
        if let headerCache, let block = headerCache.block(for: response.headers.fields) {
            out.append(contentsOf: block.bytes)
            hasRequestID = block.hasRequestID
        } else {
            let start = out.count
            appendHandlerFields(response.headers, to: &out)
            hasRequestID = response.headers.contains("x-request-id")
            headerCache?.rendered(response.headers.fields, out[start...], hasRequestID: hasRequestID)
        }
        if let requestID, !hasRequestID {
            appendField("X-Request-ID", requestID, to: &out)
        }
        // RFC 9110 §8.6: no Content-Length in 1xx or 204 responses.
        let bodyAllowed = status.code >= 200 && status.code != 204 && status.code != 304
        if bodyAllowed && response.stream != nil {
            // The length is unknown until the producer finishes; HTTP/1.0 has no chunked coding, the close ends it.
            if minorVersion >= 1 { append("Transfer-Encoding: chunked\r\n", to: &out) }
        } else if bodyAllowed {
            append("Content-Length: ", to: &out)
            LogLineEncoder.appendDecimal(response.body.count, to: &out)
            append("\r\n", to: &out)
        }
        if !keepAlive {
            append("Connection: close\r\n", to: &out)
        } else if minorVersion == 0 {
            append("Connection: keep-alive\r\n", to: &out)
        }
        append("\r\n", to: &out)
        if bodyAllowed && !omitBody {
            out.append(contentsOf: response.body)
        }
    }

    /// The handler's fields, less the server-owned ones and any a handler could split the response with.
    private static func appendHandlerFields(_ headers: HTTPHeaders, to out: inout [UInt8]) {
        for field in headers where !isServerOwned(field.name) {
            // A handler must not be able to split the response with CR/LF in a header: drop such fields.
            guard field.name.utf8.allSatisfy(ASCII.isTchar), field.value.utf8.allSatisfy(ASCII.isFieldValueByte)
            else { continue }
            appendField(field.name, field.value, to: &out)
        }
    }

    private static func appendField(_ name: String, _ value: String, to out: inout [UInt8]) {
        appendString(name, to: &out)
        append(": ", to: &out)
        appendString(value, to: &out)
        append("\r\n", to: &out)
    }

    /// A literal's bytes, copied in one go (the generic `append(contentsOf: "…".utf8)` walks them).
    private static func append(_ literal: StaticString, to out: inout [UInt8]) {
        literal.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private static func appendString(_ value: String, to out: inout [UInt8]) {
        var value = value
        value.withUTF8 { out.append(contentsOf: $0) }
    }
}

/// One loop's last rendered block of handler header fields, reused while responses carry the very same fields
/// (the same array storage, as a response built once and returned by its handler every time does).
///
/// Why storage identity is enough: the cache keeps the fields array alive, so its storage cannot be freed and
/// reused for other fields, and an array shared with the cache is copied before any change (copy on write), so the
/// same storage with the same count holds the same fields. Other fields cost one comparison; a block is rendered
/// for the cache only when the same storage comes twice in a row, so handlers that build their headers per
/// request pay no copy. Confined to its loop's thread.
final class HeaderBlockCache {
    private var fields: [(name: String, value: String)] = []
    private var seenTwice = false
    private(set) var bytes: [UInt8] = []
    private(set) var hasRequestID = false

    /// The rendered block for `fields`, when it is the cached storage and was rendered.
    func block(for fields: [(name: String, value: String)]) -> HeaderBlockCache? {
        guard !bytes.isEmpty, Self.sameStorage(fields, self.fields) else { return nil }
        return self
    }

    /// `fields` were just rendered as `block`: remember the storage, and the block once the storage repeats.
    func rendered(_ fields: [(name: String, value: String)], _ block: ArraySlice<UInt8>, hasRequestID: Bool) {
        guard !fields.isEmpty else { return }
        if Self.sameStorage(fields, self.fields) {
            guard !seenTwice else { return }
            seenTwice = true
            bytes = Array(block)
            self.hasRequestID = hasRequestID
        } else {
            self.fields = fields
            seenTwice = false
            bytes = []
        }
    }

    private static func sameStorage(_ a: [(name: String, value: String)], _ b: [(name: String, value: String)]) -> Bool
    {
        guard a.count == b.count, !a.isEmpty else { return false }
        return a.withUnsafeBufferPointer { pa in b.withUnsafeBufferPointer { pb in pa.baseAddress == pb.baseAddress } }
    }
}
