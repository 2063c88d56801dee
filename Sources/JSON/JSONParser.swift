/// The strict RFC 8259 parser behind `JSONValue.init(parsing:)`.
///
/// Hand-written rather than `JSONSerialization` because the server needs what Foundation does not give on Linux:
/// `true` apart from `1`, the integer/float distinction of the literal, duplicate-key rejection and bounds.
/// The rules, all of which reject the whole text:
/// - exactly one value, surrounded only by JSON whitespace (no trailing data, no BOM, no comments);
/// - no duplicate object keys (RFC 8259 §4 leaves them undefined, RFC 7519 §4 allows rejecting them, and silently
///   keeping one is how claim-smuggling and "which `aps` wins" bugs start); keys are compared as Swift strings,
///   so canonically equivalent spellings count as duplicates;
/// - strings are valid UTF-8 after unescaping: no overlong forms, no encoded surrogates, no lone `\uD800` escape
///   (a high surrogate escape must be followed by a low one), no raw control characters;
/// - numbers follow the grammar exactly (no `+1`, `01`, `.5`, `1.`, `NaN`); one that does not fit a finite
///   `Double` (`1e309`) is an error, never infinity;
/// - at most `JSONLimits.maxDepth` nested containers, `JSONLimits.maxBytes` bytes of input and
///   `JSONLimits.maxArrayCount` elements in any array (checked as each element starts, so the surplus is never
///   parsed).
struct JSONParser {
    private let bytes: [UInt8]
    private let maxDepth: Int
    private let maxArrayCount: Int
    private var index = 0
    private var depth = 0

    private init(bytes: [UInt8], maxDepth: Int, maxArrayCount: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.maxArrayCount = maxArrayCount
    }

    static func parse(_ bytes: [UInt8], limits: JSONLimits) throws(JSONParseError) -> JSONValue {
        guard bytes.count <= limits.maxBytes else {
            throw JSONParseError(
                offset: limits.maxBytes, reason: "input longer than \(limits.maxBytes) bytes",
                kind: .tooLarge)
        }
        var parser = JSONParser(bytes: bytes, maxDepth: limits.maxDepth, maxArrayCount: limits.maxArrayCount)
        parser.skipWhitespace()
        let value = try parser.parseValue()
        parser.skipWhitespace()
        guard parser.index == bytes.count else { throw parser.failure("data after the JSON value") }
        return value
    }

    private func failure(_ reason: String, kind: JSONParseError.Kind = .syntax) -> JSONParseError {
        JSONParseError(offset: index, reason: reason, kind: kind)
    }

    private var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ byte: UInt8) throws(JSONParseError) {
        guard current == byte else { throw failure("expected '\(Character(Unicode.Scalar(byte)))'") }
        index += 1
    }

    private mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard let byte = current else { throw failure("unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try parseLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try parseLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try parseLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("unexpected character")
        }
    }

    private mutating func parseLiteral(_ word: StaticString) throws(JSONParseError) {
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count - index >= expected.count, bytes[index..<index + expected.count].elementsEqual(expected)
        else { throw failure("invalid literal") }
        index += expected.count
    }

    private mutating func enterContainer() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth { throw failure("nesting deeper than \(maxDepth)", kind: .tooLarge) }
    }

    private mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        index += 1  // "{"
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw failure("expected a string key") }
            let keyOffset = index
            let key = try parseString()
            skipWhitespace()
            try expect(UInt8(ascii: ":"))
            skipWhitespace()
            let value = try parseValue()
            if members.updateValue(value, forKey: key) != nil {
                throw JSONParseError(offset: keyOffset, reason: "duplicate key \"\(key)\"")
            }
            skipWhitespace()
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "}"))
            depth -= 1
            return .object(members)
        }
    }

    private mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enterContainer()
        index += 1  // "["
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            if elements.count == maxArrayCount {
                throw failure("array longer than \(maxArrayCount) elements", kind: .arrayTooLong)
            }
            elements.append(try parseValue())
            skipWhitespace()
            if current == UInt8(ascii: ",") {
                index += 1
                continue
            }
            try expect(UInt8(ascii: "]"))
            depth -= 1
            return .array(elements)
        }
    }

    private mutating func parseString() throws(JSONParseError) -> String {
        let start = index
        index += 1  // opening quote
        // Most strings have no escape: up to the closing quote they are the text itself, validated and copied once
        // instead of appended byte by byte to a buffer that grows (docs/BENCHMARKS.md "Intake's store calls per
        // job"). An escape or a control character hands the rest to the loop below, the bytes before it taken over.
        var end = index
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "\"") {
                let text = try Self.text(bytes[index..<end], start: start)
                index = end + 1
                return text
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
            end += 1
        }
        var utf8 = Array(bytes[index..<end])
        index = end
        while true {
            guard let byte = current else { throw failure("unterminated string") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return try Self.text(utf8, start: start)
            case UInt8(ascii: "\\"):
                try parseEscape(into: &utf8)
            case 0x00..<0x20:
                index -= 1
                throw failure("unescaped control character in string")
            default:
                utf8.append(byte)
            }
        }
    }

    /// The string whose UTF-8 is `utf8` (escapes already decoded), for the string starting at offset `start`.
    /// - Throws: `JSONParseError` at `start` when the bytes are not valid UTF-8.
    private static func text(_ utf8: some Collection<UInt8>, start: Int) throws(JSONParseError) -> String {
        guard let text = String(validating: utf8, as: UTF8.self) else {
            throw JSONParseError(offset: start, reason: "string is not valid UTF-8")
        }
        return text
    }

    private mutating func parseEscape(into utf8: inout [UInt8]) throws(JSONParseError) {
        guard let byte = current else { throw failure("unterminated escape") }
        index += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(byte)
        case UInt8(ascii: "b"): utf8.append(0x08)
        case UInt8(ascii: "f"): utf8.append(0x0C)
        case UInt8(ascii: "n"): utf8.append(0x0A)
        case UInt8(ascii: "r"): utf8.append(0x0D)
        case UInt8(ascii: "t"): utf8.append(0x09)
        case UInt8(ascii: "u"):
            var scalarValue = UInt32(try parseHex4())
            if (0xD800...0xDBFF).contains(scalarValue) {
                // A high surrogate must be followed by an escaped low surrogate; together they are one scalar.
                guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u")
                else { throw failure("unpaired surrogate escape") }
                index += 2
                let low = UInt32(try parseHex4())
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("unpaired surrogate escape") }
                scalarValue = 0x10000 + ((scalarValue - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(scalarValue) else { throw failure("unpaired surrogate escape") }
            UTF8.encode(scalar) { utf8.append($0) }
        default:
            throw failure("invalid escape")
        }
    }

    private mutating func parseHex4() throws(JSONParseError) -> UInt16 {
        guard bytes.count - index >= 4 else { throw failure("truncated \\u escape") }
        var value: UInt16 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    private mutating func skipDigits() -> Int {
        let start = index
        while let byte = current, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
        return index - start
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        if current == UInt8(ascii: "-") { index += 1 }
        if current == UInt8(ascii: "0") {
            index += 1
        } else if skipDigits() == 0 {
            throw failure("expected a digit")
        }
        var isInteger = true
        if current == UInt8(ascii: ".") {
            index += 1
            isInteger = false
            guard skipDigits() > 0 else { throw failure("expected a digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            index += 1
            isInteger = false
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() > 0 else { throw failure("expected a digit in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let integer = Int(text) { return .int(integer) }
        guard let number = Double(text), number.isFinite else {
            throw JSONParseError(offset: start, reason: "number out of range")
        }
        return .double(number)
    }
}
