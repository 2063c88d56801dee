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

extension Substring {
    func trimmingASCIIWhitespace() -> Substring {
        var s = self
        while let c = s.first, c == " " || c == "\t" { s = s.dropFirst() }
        while let c = s.last, c == " " || c == "\t" { s = s.dropLast() }
        return s
    }
}
