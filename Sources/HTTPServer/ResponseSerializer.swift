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
    static func serialize(_ response: HTTPResponse, into out: inout [UInt8], date: [UInt8], omitBody: Bool,
                          keepAlive: Bool, minorVersion: Int, requestID: String?, serverName: String?) {
        let status = response.status
        append("HTTP/1.1 ", to: &out)
        appendNumber(status.code, to: &out)
        out.append(ASCII.space)
        appendString(status.reasonPhrase, to: &out)
        append("\r\nDate: ", to: &out)
        out.append(contentsOf: date)
        append("\r\n", to: &out)
        if let serverName {
            appendField("Server", serverName, to: &out)
        }
        for field in response.headers where !isServerOwned(field.name) {
            // A handler must not be able to split the response with CR/LF in a header: drop such fields.
            guard field.name.utf8.allSatisfy(ASCII.isTchar), field.value.utf8.allSatisfy(ASCII.isFieldValueByte)
            else { continue }
            appendField(field.name, field.value, to: &out)
        }
        if let requestID, !response.headers.contains("x-request-id") {
            appendField("X-Request-ID", requestID, to: &out)
        }
        // RFC 9110 §8.6: no Content-Length in 1xx or 204 responses.
        let bodyAllowed = status.code >= 200 && status.code != 204 && status.code != 304
        if bodyAllowed {
            append("Content-Length: ", to: &out)
            appendNumber(response.body.count, to: &out)
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

    private static func appendNumber(_ n: Int, to out: inout [UInt8]) {
        if n == 0 {
            out.append(UInt8(ascii: "0"))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var v = n
        withUnsafeMutableBytes(of: &digits) { d in
            while v > 0 {
                d[count] = UInt8(48 + v % 10)
                v /= 10
                count += 1
            }
            for i in stride(from: count - 1, through: 0, by: -1) { out.append(d[i]) }
        }
    }
}
