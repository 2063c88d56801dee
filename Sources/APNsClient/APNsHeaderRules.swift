import Foundation
import JSON

/// A request that passed `APNsHeaderRules`: every header value resolved, ready for any transport.
package struct APNsPreparedRequest: Sendable, Equatable {
    /// `:path`, `/3/device/<token>` (built when asked: the client sets the path in place, `APNsTransfer.load`).
    package var path: String { "/3/device/" + deviceToken }
    /// The device token as given (hex).
    package var deviceToken: String
    package var topic: String
    package var pushType: APNsPushType
    /// `nil` omits `apns-priority` (APNs then uses 10).
    package var priority: APNsPriority?
    /// UNIX seconds for `apns-expiration`, or `nil` to omit it.
    package var expiration: Int?
    package var collapseID: String?
    /// Lowercased canonical UUID, or `nil` to let APNs generate one.
    package var apnsID: String?
    package var payload: [UInt8]
}

/// Apple's header and payload rules (docs/APNS.md §2), checked before sending so a bad request costs no round trip.
///
/// Decisions:
/// - With no push type, only a payload whose `aps` has `content-available: 1` and no `alert`, `sound` or `badge`
///   is `background`; everything else is `alert`.
/// - `background` with no priority gets 5. `background` with an explicit priority 10 is **rejected**, not
///   downgraded: the caller asked for something APNs refuses, and silently changing it would hide the bug.
/// - The topic may be the bundle ID (the push type's suffix is appended) or already end with that suffix. A topic
///   ending with a *different* push type's suffix is rejected.
/// - Device tokens: non-empty, even-length hex of any length (Apple: don't assume a size).
package enum APNsHeaderRules {
    /// `apns-collapse-id` limit in bytes.
    package static let maxCollapseIDBytes = 64

    /// Checks `request` and resolves its headers.
    /// - Throws: the first `APNsViolation` found.
    ///
    /// A request that carries `checkedHeaders` (a publish's requests do, `APNsCheckedHeaders`) has only its device
    /// token checked here: the rest of the verdict was worked out once for all of them, and is used only when the
    /// request's other header fields are still the ones it was worked out for.
    package static func prepare(_ request: APNsRequest) throws(APNsViolation) -> APNsPreparedRequest {
        try checkDeviceToken(request.deviceToken)
        var prepared: APNsPreparedRequest
        if let checked = request.checkedHeaders, checked.applies(to: request) {
            prepared = try checked.verdict.get()
        } else {
            prepared = try prepareHeaders(request)
        }
        prepared.deviceToken = request.deviceToken
        return prepared
    }

    /// Every rule but the device token's, on the fields a publish's requests share. - Returns: the prepared request
    /// with `request.deviceToken` as given (unchecked).
    static func prepareHeaders(_ request: APNsRequest) throws(APNsViolation) -> APNsPreparedRequest {
        if request.payload.isEmpty { throw .emptyPayload }

        let pushType: APNsPushType
        if let given = request.pushType {
            pushType = given
        } else {
            pushType = try inferPushType(request.payload)
        }

        var priority = request.priority
        if pushType == .background {
            if priority == .immediate { throw .backgroundWithImmediatePriority }
            if priority == nil { priority = .powerConsidered }
        }

        let limit = pushType.maxPayloadBytes
        if request.payload.count > limit { throw .payloadTooLarge(bytes: request.payload.count, limit: limit) }

        let topic = try resolveTopic(request.topic, pushType: pushType)

        if hasControlCharacter(topic) { throw .controlCharacterInHeader(name: "apns-topic") }
        if let collapseID = request.collapseID {
            if collapseID.utf8.count > maxCollapseIDBytes { throw .collapseIDTooLong(bytes: collapseID.utf8.count) }
            if hasControlCharacter(collapseID) { throw .controlCharacterInHeader(name: "apns-collapse-id") }
        }

        var apnsID: String?
        if let given = request.apnsID {
            guard isCanonicalUUID(given) else { throw .invalidAPNsID }
            apnsID = given.lowercased()
        }

        var expiration: Int?
        if let date = request.expiration {
            let seconds = date.timeIntervalSince1970
            guard seconds >= 0, seconds < 1e12 else { throw .invalidExpiration }
            expiration = Int(seconds)
        }

        return APNsPreparedRequest(
            deviceToken: request.deviceToken, topic: topic,
            pushType: pushType, priority: priority, expiration: expiration, collapseID: request.collapseID,
            apnsID: apnsID, payload: request.payload)
    }

    /// Non-empty, even-length hexadecimal.
    package static func checkDeviceToken(_ token: String) throws(APNsViolation) {
        let utf8 = token.utf8
        if utf8.isEmpty { throw .emptyDeviceToken }
        // Over the contiguous bytes when the string has them (a token read from the store does): checked once per
        // notification, and the view's iterator costs several times the comparisons.
        let allHex =
            utf8.withContiguousStorageIfAvailable { bytes in bytes.allSatisfy(isHexDigit) }
            ?? utf8.allSatisfy(isHexDigit)
        if !allHex { throw .deviceTokenNotHex }
        if utf8.count % 2 != 0 { throw .deviceTokenOddLength }
    }

    /// `background` only for a silent content-available payload; `alert` otherwise.
    package static func inferPushType(_ payload: [UInt8]) throws(APNsViolation) -> APNsPushType {
        guard let object = JSONValue.parse(payload)?.objectValue else { throw .payloadNotJSONObject }
        guard let aps = object["aps"]?.objectValue else { return .alert }
        // Apple documents `1`; `true` is accepted as well, as this rule always has (it used to read both through
        // `JSONSerialization`, which cannot tell them apart). The payload itself is sent as written.
        let contentAvailable: Bool
        switch aps["content-available"] {
        case .bool(let flag): contentAvailable = flag
        case let number?: contentAvailable = number.intValue == 1
        case nil: contentAvailable = false
        }
        let visible = aps["alert"] != nil || aps["sound"] != nil || aps["badge"] != nil
        return contentAvailable && !visible ? .background : .alert
    }

    /// The bundle ID plus the push type's suffix, or the topic as given when it already carries the suffix.
    package static func resolveTopic(_ topic: String, pushType: APNsPushType) throws(APNsViolation) -> String {
        if topic.isEmpty { throw .emptyTopic }
        let suffix = pushType.topicSuffix
        if pushType == .mdm { return topic }
        if !suffix.isEmpty, topic.hasSuffix(suffix), topic.count > suffix.count { return topic }
        // Another type's suffix means the caller mixed up topic and push type (e.g. a VoIP topic on an alert).
        for other in APNsPushType.allCases where other != pushType && !other.topicSuffix.isEmpty {
            // `.voip-ptt` ends with neither `.voip` nor vice versa, so plain suffix checks are unambiguous.
            if topic.hasSuffix(other.topicSuffix) && !(suffix.hasSuffix(other.topicSuffix)) {
                throw .topicDoesNotMatchPushType(topic: topic, pushType: pushType)
            }
        }
        return topic + suffix
    }

    /// 8-4-4-4-12 hex digits with dashes, either case.
    package static func isCanonicalUUID(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                if byte != UInt8(ascii: "-") { return false }
            } else if !isHexDigit(byte) {
                return false
            }
        }
        return true
    }

    private static func hasControlCharacter(_ value: String) -> Bool {
        value.utf8.contains { $0 < 0x20 || $0 == 0x7F }
    }

    @inline(__always)
    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }
}
