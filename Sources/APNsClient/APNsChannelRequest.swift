/// One call of APNs' channel management API (docs/APNS.md "Broadcast channels"), transport-agnostic: the method,
/// path, headers and body to send to the management host with the team's provider token.
///
/// | Call | Request | Success |
/// |---|---|---|
/// | create | `POST /1/apps/<bundle>/channels` `{"message-storage-policy":0\|1,"push-type":"LiveActivity"}` | 201, id in `apns-channel-id` |
/// | read | `GET /1/apps/<bundle>/channels` + `apns-channel-id` | 200, the channel's configuration |
/// | delete | `DELETE /1/apps/<bundle>/channels` + `apns-channel-id` | 204 |
/// | list | `GET /1/apps/<bundle>/all-channels` | 200, `{"channels":[…]}` |
package enum APNsChannelRequest: Sendable, Hashable {
    case create(APNsMessageStoragePolicy)
    case read(APNsChannelID)
    case delete(APNsChannelID)
    case list

    /// `POST`, `GET` or `DELETE`.
    package var method: String {
        switch self {
        case .create: return "POST"
        case .read, .list: return "GET"
        case .delete: return "DELETE"
        }
    }

    /// The status APNs answers on success.
    package var successStatus: Int {
        switch self {
        case .create: return 201
        case .read, .list: return 200
        case .delete: return 204
        }
    }

    /// The request path for the app `bundleID` (checked by `APNsBundleID`).
    package func path(bundleID: APNsBundleID) -> String {
        switch self {
        case .list: return "/1/apps/\(bundleID.rawValue)/all-channels"
        default: return "/1/apps/\(bundleID.rawValue)/channels"
        }
    }

    /// `name: value` lines besides `authorization`: the channel id for read and delete, the optional
    /// `apns-request-id` (a canonical UUID).
    package func headers(requestID: String? = nil) -> [String] {
        var lines: [String] = []
        switch self {
        case .read(let id), .delete(let id): lines.append("apns-channel-id: " + id.rawValue)
        case .create: lines.append("content-type: application/json")
        case .list: break
        }
        if let requestID { lines.append("apns-request-id: " + requestID) }
        return lines
    }

    /// The JSON body (create only; empty otherwise).
    package var body: [UInt8] {
        guard case .create(let policy) = self else { return [] }
        return Array(#"{"message-storage-policy":\#(policy.rawValue),"push-type":"LiveActivity"}"#.utf8)
    }
}

/// An app's bundle id as it goes into a broadcast path: letters, digits, `.` and `-` only, at most 155 bytes
/// (Apple's bundle id alphabet), so it can never change the path's shape.
package struct APNsBundleID: Sendable, Hashable, CustomStringConvertible {
    package let rawValue: String

    package init?(_ text: String) {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= 155,
            bytes.allSatisfy({
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                    || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
            })
        else { return nil }
        rawValue = text
    }

    package var description: String { rawValue }
}
