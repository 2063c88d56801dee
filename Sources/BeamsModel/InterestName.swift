/// Beams interest names: `[A-Za-z0-9_\-=@,.;]{1,164}` (docs/BEAMS-PROTOCOL.md §8; the server's own 422 pattern).
public enum InterestName {
    package static let maxLength = 164
    /// The pattern as production quoted it in its 422 description.
    package static let pattern = "^[a-zA-Z0-9_\\-=@,.;]+$"

    public static func isValid(_ name: String) -> Bool {
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= maxLength else { return false }
        return bytes.allSatisfy(isAllowed)
    }

    @inline(__always)
    static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "="), UInt8(ascii: "@"), UInt8(ascii: ","),
            UInt8(ascii: "."), UInt8(ascii: ";"):
            return true
        default:
            return false
        }
    }
}
