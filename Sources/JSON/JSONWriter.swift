/// The one JSON serializer: compact, deterministic, escaping per RFC 8259 §7.
///
/// Strings escape `"` and `\` and the control characters U+0000–U+001F (`\n`, `\r`, `\t` by name, the rest as
/// `\u00XX`) and nothing else: `/` stays `/` (Foundation's encoders write `\/`), non-ASCII stays UTF-8.
/// Integers are written in decimal, doubles in Swift's shortest round-trip form (`1.5`, `1e-05`, `1e+308`, `-0.0`),
/// which is a valid JSON number for every finite value and parses back to the same `Double`.
package enum JSONWriter {
    /// Appends `value` (objects with sorted keys) to `output`.
    package static func write(_ value: JSONValue, to output: inout [UInt8]) {
        switch value {
        case .null: output += Array("null".utf8)
        case .bool(let flag): output += Array((flag ? "true" : "false").utf8)
        case .int(let number): output += Array(String(number).utf8)
        case .double(let number):
            // JSON has no NaN or infinity; `null` (as JavaScript's JSON.stringify writes) instead of a trap, since
            // a computed rate or average could be one. The parser never produces them.
            guard number.isFinite else { output += Array("null".utf8); return }
            // Swift's shortest round-trip form (`1e-05`, `1700000000.0`) is valid JSON for finite values.
            output += Array(number.description.utf8)
        case .string(let text): writeString(text, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            // UTF-8 byte order, not `String.<`: deterministic whatever the normalization of the keys.
            writeObject(members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }, to: &output)
        }
    }

    /// Writes members in the given order, for formats whose member order is part of what readers expect (a JWT
    /// header's `alg` before `kid` as in Apple's and Beams' examples, Beams' `error` before `description`).
    /// The caller keeps the keys distinct.
    package static func writeObject(_ members: [(key: String, value: JSONValue)], to output: inout [UInt8]) {
        output.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            writeString(member.key, to: &output)
            output.append(UInt8(ascii: ":"))
            write(member.value, to: &output)
        }
        output.append(UInt8(ascii: "}"))
    }

    /// `writeObject` returning the bytes.
    package static func object(_ members: [(key: String, value: JSONValue)]) -> [UInt8] {
        var output: [UInt8] = []
        writeObject(members, to: &output)
        return output
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `text` as a quoted, escaped JSON string.
    package static func writeString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 0x0A: output += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: output += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: output += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20:
                output += Array("\\u00".utf8)
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
