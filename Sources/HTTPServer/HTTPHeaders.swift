/// An ordered list of header fields with case-insensitive name lookup (RFC 9110 §5.1).
///
/// Names keep the spelling they arrived with; repeated fields are kept as separate entries.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    public private(set) var fields: [(name: String, value: String)]

    public init() { fields = [] }

    public init(_ fields: [(String, String)]) { self.fields = fields.map { (name: $0.0, value: $0.1) } }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// Appends a field, keeping any existing fields of the same name.
    public mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    /// Replaces every field named `name` with one field.
    public mutating func replaceOrAdd(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { HTTPHeaders.equalsIgnoringCase($0.name, name) }
    }

    /// The first value of `name`, or nil.
    public subscript(_ name: String) -> String? { first(name) }

    /// The first value of `name`, or nil.
    public func first(_ name: String) -> String? {
        for field in fields where HTTPHeaders.equalsIgnoringCase(field.name, name) { return field.value }
        return nil
    }

    /// Every value of `name`, in arrival order.
    public func values(_ name: String) -> [String] {
        fields.filter { HTTPHeaders.equalsIgnoringCase($0.name, name) }.map(\.value)
    }

    /// Whether any field is named `name`.
    public func contains(_ name: String) -> Bool { first(name) != nil }

    /// Comma-separated list elements of every `name` field, trimmed and lowercased (for `Connection`, etc.).
    public func tokens(_ name: String) -> [String] {
        values(name).flatMap { $0.split(separator: ",") }.map {
            $0.trimmingASCIIWhitespace().lowercased()
        }.filter { !$0.isEmpty }
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// ASCII case-insensitive comparison without allocating.
    static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        var ia = a.utf8.makeIterator()
        var ib = b.utf8.makeIterator()
        while true {
            switch (ia.next(), ib.next()) {
            case (nil, nil): return true
            case let (x?, y?):
                if x != y && ASCII.lower(x) != ASCII.lower(y) { return false }
            default: return false
            }
        }
    }
}

extension Substring {
    func trimmingASCIIWhitespace() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}

/// Byte classes from RFC 9110 §5.6.2 (tchar) and §5.5 (field-vchar).
enum ASCII {
    static let cr: UInt8 = 13
    static let lf: UInt8 = 10
    static let space: UInt8 = 32
    static let tab: UInt8 = 9
    static let colon: UInt8 = 58

    @inline(__always) static func lower(_ c: UInt8) -> UInt8 { (c >= 65 && c <= 90) ? c + 32 : c }

    private static let tcharTable: [Bool] = {
        var t = [Bool](repeating: false, count: 256)
        for c in UInt8(ascii: "0")...UInt8(ascii: "9") { t[Int(c)] = true }
        for c in UInt8(ascii: "a")...UInt8(ascii: "z") { t[Int(c)] = true }
        for c in UInt8(ascii: "A")...UInt8(ascii: "Z") { t[Int(c)] = true }
        for c in "!#$%&'*+-.^_`|~".utf8 { t[Int(c)] = true }
        return t
    }()

    /// token = 1*tchar
    @inline(__always) static func isTchar(_ c: UInt8) -> Bool { tcharTable[Int(c)] }

    /// field-vchar = VCHAR / obs-text, plus SP and HTAB inside a value. Everything else (NUL, CR, LF, other
    /// controls, DEL) is rejected: RFC 9110 §5.5 says a recipient of CR, LF or NUL MUST reject or replace them.
    @inline(__always) static func isFieldValueByte(_ c: UInt8) -> Bool {
        c == tab || (c >= 0x20 && c != 0x7F)
    }

    static func isHexDigit(_ c: UInt8) -> Bool { hexValue(c) != nil }

    static func hexValue(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - 48
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - 87
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - 55
        default: return nil
        }
    }
}
