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
        // One pass for the query's `?` and the fragment's `#` (never sent, but be safe): the generic
        // `firstIndex(of:)` on a substring's UTF-8 view costs a few hundred instructions per call on this hot path.
        let utf8 = rest.utf8
        guard let q = firstOffset(of: question, or: UInt8(ascii: "#"), in: utf8) else { return (rest, nil) }
        let mark = utf8.index(utf8.startIndex, offsetBy: q)
        let path = rest[..<mark]
        guard utf8[mark] == question else { return (path, nil) }
        let query = rest[utf8.index(after: mark)...]
        let queryUTF8 = query.utf8
        if let hash = firstOffset(of: UInt8(ascii: "#"), or: UInt8(ascii: "#"), in: queryUTF8) {
            return (path, query[..<queryUTF8.index(queryUTF8.startIndex, offsetBy: hash)])
        }
        return (path, query)
    }

    /// The offset of the first `a` or `b` in `bytes`, scanned in place when the bytes are contiguous (native
    /// strings always are).
    static func firstOffset(of a: UInt8, or b: UInt8, in bytes: Substring.UTF8View) -> Int? {
        if let found = bytes.withContiguousStorageIfAvailable({ buffer -> Int? in
            for i in 0..<buffer.count where buffer[i] == a || buffer[i] == b { return i }
            return nil
        }) {
            return found
        }
        return bytes.firstIndex { $0 == a || $0 == b }.map { bytes.distance(from: bytes.startIndex, to: $0) }
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
            let rest = utf8[start...]
            let slash = UInt8(ascii: "/")
            let end =
                firstOffset(of: slash, or: slash, in: rest).map { utf8.index(start, offsetBy: $0) }
                ?? utf8.endIndex
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
    package func formDecodedPath(fromSegment index: Int) -> String? {
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
