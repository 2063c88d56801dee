/// A JSON value inside a JWT header or claims set.
///
/// Numbers keep the distinction JSON text makes: a literal without fraction or exponent that fits in `Int` is
/// `.int`; every other number is `.double`. That lets the verifier insist on integer NumericDates.
public enum JWTValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JWTValue])
    case object([String: JWTValue])

    /// Parses one JSON text (RFC 8259) strictly: no trailing data, no duplicate object keys (RFC 7519 §4 allows
    /// rejecting them, and silently picking one is how claim-smuggling bugs start), valid UTF-8, finite numbers,
    /// nesting at most `JSONParser.maxDepth` deep.
    public init(parsing bytes: [UInt8]) throws(JSONParseError) {
        self = try JSONParser.parse(bytes)
    }

    /// The string, if this is a JSON string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The members, if this is a JSON object.
    public var objectValue: [String: JWTValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The value as a whole number of seconds (a NumericDate, RFC 7519 §2), or `nil` for anything else.
    ///
    /// Integral numbers written with a fraction or an exponent (`1.7e9`, `1700000000.0`) are accepted: RFC 7519
    /// allows any JSON number, and Go/Node/Python JWT libraries (the Beams service among them) read NumericDates
    /// as floats, so a token they accept must not fail here. Fractional values are refused: the Beams service
    /// rejected them (server-Swift SDK changelog 1.0.2), and rounding would move an expiry.
    public var numericDate: Int? {
        switch self {
        case .int(let value): return value
        case .double(let value): return Int(exactly: value)
        default: return nil
        }
    }

    /// Compact JSON text; object keys sorted so that equal values always encode to equal bytes.
    ///
    /// - Precondition: no `.double` is NaN or infinite (JSON cannot represent them; the parser never produces them).
    public var jsonText: String {
        var output: [UInt8] = []
        JSONWriter.write(self, to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// `jsonText` as UTF-8 bytes.
    public var jsonBytes: [UInt8] {
        var output: [UInt8] = []
        JSONWriter.write(self, to: &output)
        return output
    }
}

extension JWTValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByFloatLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(arrayLiteral elements: JWTValue...) { self = .array(elements) }
    public init(nilLiteral: ()) { self = .null }

    public init(dictionaryLiteral elements: (String, JWTValue)...) {
        var members: [String: JWTValue] = [:]
        for (key, value) in elements { members[key] = value }
        self = .object(members)
    }
}
