import Foundation

/// A broadcast channel id as APNs issues it (`apns-channel-id`): standard base64 (RFC 4648 §4), which may hold
/// `/`, `+` and `=`. Apple says not to assume a size, so only a generous bound applies.
///
/// Ids reach the server inside URL paths, where `/` would split a segment: callers may send the id
/// percent-encoded or as base64url (`-` and `_`, padding optional), and both become the standard form here.
package struct APNsChannelID: Sendable, Hashable, CustomStringConvertible {
    /// Longest accepted id, in characters (ids seen are 24; the bound only keeps hostile input small).
    package static let maxLength = 256

    /// The standard, padded base64 text APNs expects back in `apns-channel-id`.
    package let rawValue: String

    /// Parses standard base64 or base64url, with or without padding; nil for anything else: empty, too long, a
    /// character outside both alphabets, padding inside the text, a length no base64 text can have, or the two
    /// alphabets mixed.
    package init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty, bytes.count <= Self.maxLength else { return nil }
        var body = bytes
        var padding = 0
        while let last = body.last, last == UInt8(ascii: "=") {
            body.removeLast()
            padding += 1
        }
        guard !body.isEmpty, padding <= 2 else { return nil }
        var standard = false
        var url = false
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 2)
        for byte in body {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                out.append(byte)
            case UInt8(ascii: "+"), UInt8(ascii: "/"):
                standard = true
                out.append(byte)
            case UInt8(ascii: "-"):
                url = true
                out.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"):
                url = true
                out.append(UInt8(ascii: "/"))
            default:
                return nil
            }
        }
        guard !(standard && url), out.count % 4 != 1 else { return nil }
        let needed = (4 - out.count % 4) % 4
        // Padding, when present, must be exactly what the length needs.
        guard padding == 0 || padding == needed else { return nil }
        out += Array(repeating: UInt8(ascii: "="), count: needed)
        guard out.count <= Self.maxLength + 2, Data(base64Encoded: Data(out)) != nil else { return nil }
        rawValue = String(decoding: out, as: UTF8.self)
    }

    /// The id in base64url without padding: safe in a URL path segment as is.
    package var urlSafe: String {
        var text = rawValue.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    package var description: String { rawValue }
}

/// How a channel keeps messages (`message-storage-policy`), fixed when the channel is created.
package enum APNsMessageStoragePolicy: Int, Sendable, Hashable {
    /// `0`, no message stored: a device that is offline misses the update; a higher publishing budget, and
    /// sends must carry `apns-expiration: 0` (APNs answers `BadExpirationDate` otherwise).
    case noMessageStored = 0
    /// `1`, the most recent message is stored and delivered when the device comes back.
    case mostRecentMessageStored = 1
}
