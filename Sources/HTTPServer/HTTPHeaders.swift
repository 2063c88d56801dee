/// An ordered list of header fields with case-insensitive name lookup (RFC 9110 §5.1).
///
/// Names keep the spelling they arrived with; repeated fields are kept as separate entries.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    package private(set) var fields: [(name: String, value: String)]

    /// No fields.
    package init() { fields = [] }

    /// Fields from (name, value) pairs, in order.
    package init(_ fields: [(String, String)]) { self.fields = fields.map { (name: $0.0, value: $0.1) } }

    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// Appends a field, keeping any existing fields of the same name.
    package mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    /// Replaces every field named `name` with one field.
    package mutating func replaceOrAdd(_ name: String, _ value: String) {
        remove(name)
        add(name, value)
    }

    /// Removes every field named `name`.
    package mutating func remove(_ name: String) {
        fields.removeAll { HTTPHeaders.equalsIgnoringCase($0.name, name) }
    }

    /// The first value of `name`, or nil.
    package subscript(_ name: String) -> String? { first(name) }

    /// The first value of `name`, or nil.
    package func first(_ name: String) -> String? {
        for field in fields where HTTPHeaders.equalsIgnoringCase(field.name, name) { return field.value }
        return nil
    }

    /// Every value of `name`, in arrival order.
    package func values(_ name: String) -> [String] {
        fields.filter { HTTPHeaders.equalsIgnoringCase($0.name, name) }.map(\.value)
    }

    /// Whether any field is named `name`.
    package func contains(_ name: String) -> Bool { first(name) != nil }

    /// Comma-separated list elements of every `name` field, trimmed and lowercased (for `Connection`, etc.).
    package func tokens(_ name: String) -> [String] { Self.listTokens(values(name)) }

    /// `tokens(_:)` of the given field values.
    static func listTokens(_ values: [String]) -> [String] {
        values.flatMap { $0.split(separator: ",") }.map {
            $0.trimmingASCIIWhitespace().lowercased()
        }.filter { !$0.isEmpty }
    }

    /// Number of fields (repeated names count separately).
    package var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public var description: String { fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n") }

    /// ASCII case-insensitive comparison without allocating. Lengths first: the parser and the serializer ask about
    /// every field, and nearly every name differs from the one asked for in length already.
    static func equalsIgnoringCase(_ a: String, _ b: String) -> Bool {
        let au = a.utf8
        let bu = b.utf8
        guard au.count == bu.count else { return false }
        var ib = bu.makeIterator()
        for x in au {
            guard let y = ib.next() else { return false }
            if x != y && ASCII.lower(x) != ASCII.lower(y) { return false }
        }
        return true
    }
}
