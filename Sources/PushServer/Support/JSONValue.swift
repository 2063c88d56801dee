import JWTSigner

/// The server's JSON value: JWTSigner's strict parser and sorted-key writer, shared so that the codebase has one
/// JSON implementation. It keeps the distinctions `JSONSerialization` loses on Linux (`true` vs `1`, `1` vs `1.0`),
/// so customer payloads reach APNs exactly as written, and it rejects duplicate keys.
public typealias JSONValue = JWTValue

extension JWTValue {
    /// Parses bytes; nil when they are not one JSON text.
    public static func parse(_ bytes: some Collection<UInt8>) -> JSONValue? {
        try? JSONValue(parsing: Array(bytes))
    }

    /// Compact JSON with sorted keys.
    public func serialized() -> [UInt8] { jsonBytes }

    public var arrayValue: [JSONValue]? { if case .array(let v) = self { return v } else { return nil } }
    public var boolValue: Bool? { if case .bool(let v) = self { return v } else { return nil } }
    /// Integers, and doubles that are whole numbers.
    public var intValue: Int? { numericDate }
    public var isNull: Bool { self == .null }

    public subscript(key: String) -> JSONValue? { objectValue?[key] }

    /// A short name of the JSON type, for error messages ("expected object, got string").
    public var typeName: String {
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
