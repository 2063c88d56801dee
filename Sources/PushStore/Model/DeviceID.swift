import Foundation

extension Device {
    /// A new public device id, `<platform>-<UUIDv7>` in lower case (`apns-0190…`), as every backend issues them.
    package static func makeID(platform: Platform, at now: Date) -> String {
        "\(platform.rawValue)-\(timeOrderedUUID(now).uuidString.lowercased())"
    }

    /// A UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then 74 random bits. Ids made close in time sort
    /// close together, so inserts into an index of public ids touch its right edge instead of a random leaf page
    /// each (a v4 id costs one random page write per registration at a million devices).
    static func timeOrderedUUID(_ now: Date) -> UUID {
        var bytes = UUID().uuid
        let millis = UInt64(max(0, now.millisecondsSince1970))
        withUnsafeMutableBytes(of: &bytes) { raw in
            for index in 0..<6 { raw[index] = UInt8(truncatingIfNeeded: millis >> (8 * (5 - index))) }
            raw[6] = (raw[6] & 0x0F) | 0x70  // version 7
            raw[8] = (raw[8] & 0x3F) | 0x80  // RFC 9562 variant
        }
        return UUID(uuid: bytes)
    }
}
