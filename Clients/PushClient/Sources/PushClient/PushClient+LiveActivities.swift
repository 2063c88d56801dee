import Foundation

/// Live Activity tokens (push-server's device-API extension, docs/API.md "Live Activities"): the app reports its
/// push-to-start token per attributes type and each running activity's update token, and says when an activity
/// ended, so the backend can start, update and end activities by interest or user.
///
/// ```swift
/// Task {   // iOS 17.2+
///     for await token in Activity<MatchAttributes>.pushToStartTokenUpdates {
///         try await push.setLiveActivityStartToken(token, attributesType: "MatchAttributes")
///     }
/// }
/// Task {   // for each activity (Activity<MatchAttributes>.activityUpdates gives push-started ones)
///     for await token in activity.pushTokenUpdates {
///         try await push.setLiveActivityToken(token, activityID: activity.id, attributesType: "MatchAttributes",
///                                            reference: activity.attributes.matchID)
///     }
/// }
/// // when activity.activityStateUpdates reports .ended or .dismissed:
/// try await push.endLiveActivity(activityID: activity.id)
/// ```
extension PushClient {
    /// Stores the push-to-start token of `attributesType` (`Activity<T>.pushToStartTokenUpdates`); a new token
    /// replaces the type's previous one.
    public func setLiveActivityStartToken(_ token: Data, attributesType: String) async throws {
        try Self.validate(attributesType: attributesType)
        let body = try JSONSerialization.data(withJSONObject: ["token": try Self.hex(token)], options: [.sortedKeys])
        let path = "/live-activity/start-tokens/\(Self.escape(attributesType))"
        _ = try await serially { client in try await client.deviceRequest("PUT", path, body: body) }
    }

    /// Forgets the push-to-start token of `attributesType` (the app no longer offers push-started activities of it).
    public func removeLiveActivityStartToken(attributesType: String) async throws {
        try Self.validate(attributesType: attributesType)
        let path = "/live-activity/start-tokens/\(Self.escape(attributesType))"
        _ = try await serially { client in try await client.deviceRequest("DELETE", path) }
    }

    /// Stores the update token of a running activity (`activity.pushTokenUpdates`); call again when it rotates.
    /// - Parameters:
    ///   - reference: your own correlation id (an order or match id), shown in the server's list.
    ///   - expiresAt: when the server stops sending to it; at most (and by default) 12 hours from now.
    public func setLiveActivityToken(_ token: Data, activityID: String, attributesType: String, reference: String? = nil,
                                     expiresAt: Date? = nil) async throws {
        try Self.validate(attributesType: attributesType)
        try Self.validate(printable: activityID, maxBytes: 128, what: "activity id")
        var fields: [String: Any] = ["token": try Self.hex(token), "attributesType": attributesType]
        if let reference {
            try Self.validate(printable: reference, maxBytes: 256, what: "reference")
            fields["reference"] = reference
        }
        if let expiresAt {
            let seconds = expiresAt.timeIntervalSince1970.rounded(.down)
            // Checked before converting: Int(_:) traps on infinity and on values out of range.
            guard seconds.isFinite, (0...253_402_300_799).contains(seconds) else {
                throw PushClientError.invalidLiveActivity("expiresAt \(expiresAt)")
            }
            fields["expiresAt"] = Int(seconds)
        }
        let body = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        let path = "/live-activity/activities/\(Self.escape(activityID))"
        _ = try await serially { client in try await client.deviceRequest("PUT", path, body: body) }
    }

    /// The activity ended or was dismissed (`activityStateUpdates`): no more updates are sent to it.
    public func endLiveActivity(activityID: String) async throws {
        try Self.validate(printable: activityID, maxBytes: 128, what: "activity id")
        let path = "/live-activity/activities/\(Self.escape(activityID))"
        _ = try await serially { client in try await client.deviceRequest("DELETE", path) }
    }

    /// The server's rule for attributes types: 1-128 ASCII letters, digits, `_` or `.`, not starting with a digit
    /// or `.` (the Swift type name, as `attributes-type` spells it in a start payload).
    static func validate(attributesType: String) throws {
        let bytes = Array(attributesType.utf8)
        let valid = !bytes.isEmpty && bytes.count <= 128 && !(48...57).contains(bytes[0]) && bytes[0] != 46
            && bytes.allSatisfy { (48...57).contains($0) || (65...90).contains($0) || (97...122).contains($0) || $0 == 95 || $0 == 46 }
        guard valid else { throw PushClientError.invalidLiveActivity("attributes type \(attributesType.prefix(140))") }
    }

    static func validate(printable text: String, maxBytes: Int, what: String) throws {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maxBytes, bytes.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw PushClientError.invalidLiveActivity("\(what) \(text.prefix(140))")
        }
    }

    static func hex(_ token: Data) throws -> String {
        guard (8...200).contains(token.count) else { throw PushClientError.invalidLiveActivity("token of \(token.count) bytes") }
        return token.map { String(format: "%02x", $0) }.joined()
    }
}
