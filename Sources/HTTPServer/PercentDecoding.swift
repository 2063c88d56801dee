/// Splitting and decoding of request targets (RFC 3986 §2.1, §3.3, §3.4).
enum PercentDecoding {
    /// Percent-decodes `bytes`; `+` becomes a space only when `plusAsSpace` (query strings, per
    /// application/x-www-form-urlencoded). Returns nil on a malformed escape or invalid UTF-8.
    static func decode<S: Collection>(_ bytes: S, plusAsSpace: Bool) -> String? where S.Element == UInt8 {
        // Nearly every segment has nothing to decode: the same string, without the intermediate buffer.
        if !bytes.contains(where: { $0 == UInt8(ascii: "%") || (plusAsSpace && $0 == UInt8(ascii: "+")) }) {
            return String(decoding: bytes, as: UTF8.self)
        }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = bytes.startIndex
        var hasEscape = false
        while i != bytes.endIndex {
            let c = bytes[i]
            if c == UInt8(ascii: "%") {
                let h = bytes.index(after: i)
                guard h != bytes.endIndex else { return nil }
                let l = bytes.index(after: h)
                guard l != bytes.endIndex, let hi = ASCII.hexValue(bytes[h]), let lo = ASCII.hexValue(bytes[l]) else {
                    return nil
                }
                out.append(hi << 4 | lo)
                hasEscape = true
                i = bytes.index(after: l)
                continue
            }
            out.append(plusAsSpace && c == UInt8(ascii: "+") ? UInt8(ascii: " ") : c)
            i = bytes.index(after: i)
        }
        if !hasEscape { return String(decoding: out, as: UTF8.self) }
        return String(validating: out, as: UTF8.self)
    }

    /// Splits a target into its path and query, removing the scheme and authority of an absolute-form target.
    /// Works on the UTF-8 view: targets are ASCII (the parser guarantees it), and Character iteration is slow.
    static func split(target: String) -> (path: Substring, query: Substring?) {
        var rest = Substring(target)
        let slash = UInt8(ascii: "/")
        let question = UInt8(ascii: "?")
        if rest.utf8.first != slash, let schemeEnd = rest.range(of: "://") {
            rest = rest[schemeEnd.upperBound...]
            if let start = rest.utf8.firstIndex(where: { $0 == slash || $0 == question }) {
                rest = rest[start...]
                if rest.utf8.first == question { return ("/", rest.dropFirst()) }
            } else {
                return ("/", nil)
            }
        }
        // The fragment is never sent, but be safe.
        if let hash = rest.utf8.firstIndex(of: UInt8(ascii: "#")) { rest = rest[..<hash] }
        if let q = rest.utf8.firstIndex(of: question) {
            return (rest[..<q], rest[rest.utf8.index(after: q)...])
        }
        return (rest, nil)
    }

    /// Decoded path segments. `;`, `,`, `=` and `@` are ordinary characters (no matrix parameters), and an
    /// encoded `%2F` stays inside its segment. Empty segments are kept except the one before the leading `/`.
    static func segments(path: Substring) -> [String]? {
        var result: [String] = []
        // Walked in place rather than with `split`, which builds an array of the parts first.
        let utf8 = path.utf8
        var start = utf8.startIndex
        var first = true
        while true {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: "/")) ?? utf8.endIndex
            let part = utf8[start..<end]
            if !(first && part.isEmpty) {
                guard let s = decode(part, plusAsSpace: false) else { return nil }
                result.append(s)
            }
            first = false
            if end == utf8.endIndex { return result }
            start = utf8.index(after: end)
        }
    }

    /// Query items, decoded with `+` as space; items without `=` get an empty value.
    static func queryItems(_ query: Substring) -> [(name: String, value: String)]? {
        var items: [(name: String, value: String)] = []
        for pair in query.utf8.split(separator: UInt8(ascii: "&")) {
            let eq = pair.firstIndex(of: UInt8(ascii: "="))
            let rawName = eq.map { pair[..<$0] } ?? pair[...]
            let rawValue = eq.map { pair[pair.index(after: $0)...] } ?? pair[pair.endIndex...]
            guard let name = decode(rawName, plusAsSpace: true), let value = decode(rawValue, plusAsSpace: true) else {
                return nil
            }
            items.append((name: name, value: value))
        }
        return items
    }
}

extension HTTPRequest {
    /// The path from segment `index` on (0 is the segment after the leading `/`), joined with `/` and
    /// percent-decoded with `+` read as a space, the way `application/x-www-form-urlencoded` encoders write it
    /// (Java's `URLEncoder`, PHP's `urlencode`, Ruby's `CGI.escape`). Route parameters keep `+` literal (RFC 3986);
    /// this is for a handler that knows its client form-encoded the path.
    /// - Returns: nil when the path has no segment `index` or holds a malformed escape.
    public func formDecodedPath(fromSegment index: Int) -> String? {
        let parts = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        guard index >= 0, index < parts.count else { return nil }
        var decoded: [String] = []
        for part in parts.dropFirst(index) {
            guard let segment = PercentDecoding.decode(part, plusAsSpace: true) else { return nil }
            decoded.append(segment)
        }
        return decoded.joined(separator: "/")
    }
}
