/// Compact JSON encoding for `JWTValue` and for the fixed-order headers and claims this module writes.
enum JSONWriter {
    static func write(_ value: JWTValue, to output: inout [UInt8]) {
        switch value {
        case .null: output += Array("null".utf8)
        case .bool(let flag): output += Array((flag ? "true" : "false").utf8)
        case .int(let number): output += Array(String(number).utf8)
        case .double(let number):
            precondition(number.isFinite, "JSON cannot represent \(number)")
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
            writeObject(members.sorted { $0.key < $1.key }, to: &output)
        }
    }

    /// Writes members in the given order (APNs and Beams examples list `alg` before `kid`, `iss` before `iat`).
    static func writeObject(_ members: [(key: String, value: JWTValue)], to output: inout [UInt8]) {
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
    static func object(_ members: [(key: String, value: JWTValue)]) -> [UInt8] {
        var output: [UInt8] = []
        writeObject(members, to: &output)
        return output
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ text: String, to output: inout [UInt8]) {
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
