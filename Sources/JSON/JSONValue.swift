/// A JSON value (RFC 8259): the one JSON representation of every layer (JWT headers and claims, APNs payloads and
/// answers, Beams request and response bodies, the config file, the mock APNs control API).
///
/// Numbers keep the distinction JSON text makes, which `JSONSerialization` on Linux loses: a literal without
/// fraction or exponent that fits in `Int` is `.int`, every other number is `.double`, and `true` is never `1`.
/// A customer's `"content-available": 1` therefore reaches APNs as `1`, and `true` as `true`.
///
/// Objects are dictionaries; `serialized()` writes their members sorted by the keys' UTF-8 bytes, so equal values
/// always give equal bytes. Where member order is part of the output format (a JWT header's `alg` before `kid`,
/// Beams error bodies' `error` before `description`), write with `JSONWriter.object(_:)`, which keeps the order given.
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// Parses one JSON text strictly; see `JSONParser` for every rule and `JSONLimits` for the bounds.
    package init(parsing bytes: some Collection<UInt8>, limits: JSONLimits = JSONLimits()) throws(JSONParseError) {
        self = try JSONParser.parse(Array(bytes), limits: limits)
    }

    /// `init(parsing:)`, or nil when the bytes are not one acceptable JSON text (the reason is dropped).
    public static func parse(_ bytes: some Collection<UInt8>, limits: JSONLimits = JSONLimits()) -> JSONValue? {
        try? JSONValue(parsing: bytes, limits: limits)
    }

    /// Compact JSON as UTF-8: no whitespace, object keys sorted, strings escaped per RFC 8259 §7 (`"`, `\` and
    /// control characters only; `/` and non-ASCII are written as they are).
    /// A NaN or infinite `.double` (which JSON cannot represent, and the parser never produces) is written as `null`.
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        JSONWriter.write(self, to: &output)
        return output
    }

    /// `serialized()` as a `String`.
    public var jsonText: String { String(decoding: serialized(), as: UTF8.self) }

    // MARK: Typed access

    /// The string, if this is a JSON string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The members, if this is a JSON object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements, if this is a JSON array.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The flag, if this is `true` or `false` (never for the numbers `1` and `0`).
    package var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The number as an `Int` when it is a whole number that fits: `.int`, or a `.double` such as `1.7e9` or
    /// `2.0`. Nil for fractions, for doubles outside `Int`'s range, and for every other type.
    package var intValue: Int? {
        switch self {
        case .int(let value): return value
        case .double(let value): return Int(exactly: value)
        default: return nil
        }
    }

    /// The number as a `Double` (an `.int` converted, possibly rounded past 2^53), nil for other types.
    package var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// Whether this is `null`.
    package var isNull: Bool { self == .null }

    /// The member `key` of an object; nil for a missing key and for other values.
    package subscript(key: String) -> JSONValue? { objectValue?[key] }

    /// A short name of the JSON type, for error messages ("expected object, got string").
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }

    /// A later duplicate key in the literal replaces the earlier one (the parser, unlike a literal, rejects them).
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        var members: [String: JSONValue] = [:]
        for (key, value) in elements { members[key] = value }
        self = .object(members)
    }
}

extension JSONValue: CustomStringConvertible {
    /// The compact JSON text.
    public var description: String { jsonText }
}
