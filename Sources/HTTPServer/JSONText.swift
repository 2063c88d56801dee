/// Minimal JSON string escaping for the error bodies we build by hand (no Foundation encoder on the loop).
enum JSONText {
    static func object(_ pairs: [(String, String)]) -> [UInt8] {
        var out = "{"
        for (i, (k, v)) in pairs.enumerated() {
            if i > 0 { out += "," }
            out += quote(k) + ":" + quote(v)
        }
        out += "}"
        return Array(out.utf8)
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
