import BeamsModel
import ConfigModel
import Foundation
import HTTPClient
import JSON
import JWTSigner
import PushStore
import WebPush

/// Reads the lines of a device file (docs/DATA-FORMAT.md) for one instance, with the device API's own checks:
/// token forms (`DeviceToken`), interest names (`InterestName`) and the per-device cap, metadata size, time zones,
/// Live Activity token rules. Pure: no store, no clock but the `now` it is given.
package struct DeviceLineParser {
    /// A line that imports nothing, and why.
    package struct Refusal: Error, Equatable {
        package var reason: String
        /// The token masked as the invalidation log masks it (`DeviceInvalidation.mask`); nil when there was none.
        package var maskedToken: String?
    }

    /// What a line is.
    package enum Line: Equatable {
        case header(instanceID: String?)
        case device(DeviceRecord)
        /// The export's end line.
        case end
        /// An empty line (tolerated, like `\r\n` endings).
        case blank
    }

    /// The file's first line was not a header this program reads.
    package struct HeaderError: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    package let instance: InstanceConfig
    package let now: Date
    /// The Live Activity tokens one device may hold (`limits.maxLiveActivity…`). Default: the store's defaults.
    package var liveActivityLimits = LiveActivityLimits()

    package init(instance: InstanceConfig, now: Date, liveActivityLimits: LiveActivityLimits = LiveActivityLimits()) {
        self.instance = instance
        self.now = now
        self.liveActivityLimits = liveActivityLimits
    }

    /// The longest line read: a device with 5,000 interests of 164 bytes and its tokens stays under it.
    package static let maxLineBytes = 1 << 20

    package static let deviceMembers: Set<String> = [
        "cursor", "instance", "id", "platform", "token", "subscription", "environment", "environmentDeclared",
        "bundleId", "metadata", "userId", "timeZone", "interests", "createdAt", "lastRegisteredAt", "lastResult",
        "invalidatedAt", "liveActivities",
    ]

    /// Checks the first line. - Throws: `HeaderError` for anything but a version-1 header.
    package static func header(_ bytes: some Collection<UInt8>) throws(HeaderError) {
        guard let object = JSONValue.parse(bytes, limits: JSONLimits(maxDepth: 4, maxBytes: 4096))?.objectValue,
            object["format"]?.stringValue == DeviceDataFormat.name
        else {
            throw HeaderError(
                description: "the first line is not a \(DeviceDataFormat.name) header "
                    + "({\"format\":\"\(DeviceDataFormat.name)\",\"version\":1,…})")
        }
        guard object["version"]?.intValue == DeviceDataFormat.version else {
            throw HeaderError(
                description: "format version \(object["version"]?.jsonText ?? "null") is not one this "
                    + "program reads (it reads version \(DeviceDataFormat.version))")
        }
    }

    /// Reads one line after the header.
    package func parse(_ bytes: some Collection<UInt8>) throws(Refusal) -> Line {
        var bytes = Array(bytes)
        if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { return .blank }
        guard bytes.count <= Self.maxLineBytes else {
            throw Refusal(reason: "the line is longer than \(Self.maxLineBytes) bytes", maskedToken: nil)
        }
        let object: [String: JSONValue]
        do {
            guard
                let parsed = try JSONValue(parsing: bytes, limits: JSONLimits(maxDepth: 8, maxBytes: Self.maxLineBytes))
                    .objectValue
            else { throw Refusal(reason: "the line is not a JSON object", maskedToken: nil) }
            object = parsed
        } catch let refusal as Refusal {
            throw refusal
        } catch {
            throw Refusal(reason: "the line is not valid JSON (\(error))", maskedToken: nil)
        }
        if object["end"] == .bool(true) { return .end }
        if object["format"] != nil { throw Refusal(reason: "a second header line", maskedToken: nil) }
        return .device(try device(object))
    }

    private func device(_ object: [String: JSONValue]) throws(Refusal) -> DeviceRecord {
        guard let platformName = object["platform"]?.stringValue, let platform = Platform(rawValue: platformName) else {
            throw Refusal(reason: "`platform` must be apns, fcm, web, unifiedpush or hms", maskedToken: nil)
        }
        let token = try self.token(object, platform)
        let masked = DeviceInvalidation.mask(token: token)
        func refuse(_ reason: String) -> Refusal { Refusal(reason: reason, maskedToken: masked) }
        if let unknown = object.keys.sorted().first(where: { !Self.deviceMembers.contains($0) }) {
            throw refuse("unknown member `\(unknown.prefix(64))`")
        }
        var id = ""
        if let value = object["id"], !value.isNull {
            guard let text = value.stringValue, Self.isDeviceID(text, platform: platform) else {
                throw refuse(
                    "`id` must be \(platform.rawValue)- followed by up to 100 lower-case letters, digits and -")
            }
            id = text
        }
        var environment = instance.apns?.defaultEnvironment ?? .production
        if let value = object["environment"], !value.isNull {
            guard let name = value.stringValue, let parsed = PushEnvironment(rawValue: name) else {
                throw refuse("`environment` must be \"sandbox\" or \"production\"")
            }
            environment = parsed
        }
        let declared = try flag(object["environmentDeclared"], "environmentDeclared", masked) ?? false
        let bundleID = try text(object["bundleId"], "bundleId", maxBytes: 255, masked)
        let metadata: String
        do {
            metadata = try DeviceMetadata.text(object["metadata"])
        } catch {
            throw refuse(error.detail)
        }
        let userID = try text(object["userId"], "userId", maxBytes: BeamsUserToken.maxSubjectBytes, masked)
        let timeZone = try text(object["timeZone"], "timeZone", maxBytes: TimeZoneName.maxLength, masked)
        if let timeZone, let problem = TimeZoneName.problem(timeZone) { throw refuse("`timeZone` \(problem)") }
        var interests: [String] = []
        if let value = object["interests"], !value.isNull {
            guard let list = value.arrayValue else { throw refuse("`interests` must be an array of interest names") }
            guard list.count <= DeviceAPI.maxInterestsPerDevice else {
                throw refuse("more than \(DeviceAPI.maxInterestsPerDevice) interests")
            }
            var seen = Set<String>()
            for element in list {
                guard let name = element.stringValue, InterestName.isValid(name) else {
                    throw refuse(BeamsError.invalidInterest(element.stringValue ?? element.jsonText).detail)
                }
                if seen.insert(name).inserted { interests.append(name) }
            }
            interests.sort()
        }
        var omitted: DeviceRecord.OmittedTimes = []
        let created = try date(object["createdAt"], "createdAt", masked)
        if created == nil { omitted.insert(.createdAt) }
        let createdAt = created ?? now
        let registered = try date(object["lastRegisteredAt"], "lastRegisteredAt", masked)
        if registered == nil { omitted.insert(.lastRegisteredAt) }
        let lastRegisteredAt = registered ?? createdAt
        var lastResult: DeliveryResult?
        if let value = object["lastResult"], !value.isNull {
            guard let result = value.objectValue, let status = result["status"]?.intValue, (0...999).contains(status),
                let at = try date(result["at"], "lastResult.at", masked)
            else { throw refuse("`lastResult` must be {\"status\": 0-999, \"reason\": string or null, \"at\": time}") }
            lastResult = DeliveryResult(
                status: status,
                reason: try text(
                    result["reason"], "lastResult.reason",
                    maxBytes: 255, masked), at: at)
        }
        let invalidatedAt = try date(object["invalidatedAt"], "invalidatedAt", masked)
        // Both members absent (not null): the source knows nothing of deliveries; a known device keeps its health.
        if object["lastResult"] == nil && object["invalidatedAt"] == nil { omitted.insert(.health) }
        let (tokens, tokenTimesOmitted) = try liveActivities(
            object["liveActivities"], platform: platform, deviceID: id, masked)
        if tokenTimesOmitted { omitted.insert(.liveActivityTimes) }
        return DeviceRecord(
            device: Device(
                id: id, instanceID: instance.id, platform: platform, token: token, environment: environment,
                environmentDeclared: declared, bundleID: bundleID, metadata: metadata, userID: userID,
                createdAt: createdAt, lastRegisteredAt: lastRegisteredAt, lastResult: lastResult,
                invalidatedAt: invalidatedAt, timeZone: timeZone),
            interests: interests, liveActivityTokens: tokens, omittedTimes: omitted)
    }

    /// The token in the store's form, checked as the device API checks a registration's.
    private func token(_ object: [String: JSONValue], _ platform: Platform) throws(Refusal) -> String {
        switch platform {
        case .apns, .fcm, .hms:
            guard let raw = object["token"]?.stringValue, !raw.isEmpty else {
                throw Refusal(reason: "`token` (a string) is required for \(platform.rawValue)", maskedToken: nil)
            }
            let masked = DeviceInvalidation.mask(token: raw)
            do {
                return try DeviceAPI.normalizedToken(raw, platform: platform)
            } catch {
                throw Refusal(reason: error.detail, maskedToken: masked)
            }
        case .web, .unifiedpush:
            guard let subscription = object["subscription"]?.objectValue else {
                throw Refusal(
                    reason: "`subscription` ({\"endpoint\", \"keys\"}) is required for \(platform.rawValue)",
                    maskedToken: nil)
            }
            let masked = DeviceInvalidation.mask(token: JSONValue.object(subscription).jsonText)
            do {
                if platform == .web {
                    guard instance.web != nil else { throw BeamsError.webNotConfigured }
                    // The device API's check of a browser's token, which is base64 of the subscription JSON.
                    let encoded = Data(JSONValue.object(subscription).serialized()).base64EncodedString()
                    return try DeviceAPI.normalizedToken(encoded, platform: .web, web: instance.web)
                }
                guard let settings = instance.unifiedpush else { throw BeamsError.unifiedPushNotConfigured }
                let (token, url) = try DeviceToken.unifiedPush(subscription, ports: settings.ports)
                // An address literal is judged here; a host name is judged at every send (an import resolves no names).
                let policy = DestinationPolicy(allowances: settings.allowedDestinations)
                if let address = url.literalAddress,
                    case .refused(let range) = policy.verdict(for: address, host: url.host)
                {
                    throw BeamsError.invalidUnifiedPushEndpoint(
                        "the endpoint's address is \(range) (unifiedpush.allowedDestinations)")
                }
                return token
            } catch let error as BeamsError {
                throw Refusal(reason: error.detail, maskedToken: masked)
            } catch {
                throw Refusal(reason: "\(error)", maskedToken: masked)
            }
        }
    }

    private func liveActivities(
        _ value: JSONValue?, platform: Platform, deviceID: String, _ masked: String
    ) throws(Refusal) -> (tokens: [LiveActivityToken], timesOmitted: Bool) {
        guard let value, !value.isNull else { return ([], false) }
        func refuse(_ reason: String) -> Refusal { Refusal(reason: reason, maskedToken: masked) }
        guard let list = value.arrayValue else { throw refuse("`liveActivities` must be an array") }
        guard list.isEmpty || platform == .apns else { throw refuse("only apns devices have Live Activity tokens") }
        let limits = liveActivityLimits
        var tokens: [LiveActivityToken] = []
        var timesOmitted = false
        for element in list {
            guard let item = element.objectValue, let kindName = item["kind"]?.stringValue,
                let kind = LiveActivityToken.Kind(rawValue: kindName)
            else { throw refuse("a Live Activity token needs `kind` start or update") }
            guard let raw = item["token"]?.stringValue, raw.utf8.count <= 400, let token = try? DeviceToken.apns(raw)
            else {
                throw refuse("a Live Activity `token` must be 16-400 hexadecimal digits")
            }
            guard let type = item["attributesType"]?.stringValue, LiveActivityToken.isValidAttributesType(type) else {
                throw refuse("a Live Activity `attributesType`: \(LiveActivityPayload.attributesTypeRule)")
            }
            let activityID = try text(
                item["activityId"], "activityId", maxBytes: LiveActivityToken.maxNameBytes, masked)
            guard (kind == .update) == (activityID != nil),
                activityID.map({ LiveActivityToken.isValidPrintable($0, maxBytes: LiveActivityToken.maxNameBytes) })
                    ?? true
            else { throw refuse("an update token needs `activityId` (1-128 printable ASCII), a start token none") }
            let reference = try text(
                item["reference"], "reference", maxBytes: LiveActivityToken.maxReferenceBytes, masked)
            let created = try date(item["createdAt"], "liveActivities.createdAt", masked)
            let updated = try date(item["updatedAt"], "liveActivities.updatedAt", masked)
            if created == nil || updated == nil { timesOmitted = true }
            tokens.append(
                LiveActivityToken(
                    deviceID: deviceID, kind: kind, token: token, attributesType: type, activityID: activityID,
                    reference: reference, expiresAt: try date(item["expiresAt"], "liveActivities.expiresAt", masked),
                    createdAt: created ?? now, updatedAt: updated ?? created ?? now))
        }
        tokens.sort(by: DeviceRecord.order)
        for (a, b) in zip(tokens, tokens.dropFirst())
        where a.kind == b.kind
            && (a.kind == .start ? a.attributesType == b.attributesType : a.activityID == b.activityID)
        {
            throw refuse("two Live Activity tokens for the same \(a.kind == .start ? "attributes type" : "activity")")
        }
        if tokens.filter({ $0.kind == .start }).count > limits.maxStartTokensPerDevice
            || tokens.filter({ $0.kind == .update }).count > limits.maxActivitiesPerDevice
        {
            throw refuse(
                "more Live Activity tokens than a device may hold (\(limits.maxStartTokensPerDevice) start, "
                    + "\(limits.maxActivitiesPerDevice) update)")
        }
        return (tokens, timesOmitted)
    }

    /// `<platform>-` and 1-100 of `[a-z0-9-]`: the ids this server issues (`Device.makeID`) and ones like them.
    package static func isDeviceID(_ text: String, platform: Platform) -> Bool {
        let prefix = platform.rawValue + "-"
        guard text.hasPrefix(prefix) else { return false }
        let rest = text.utf8.dropFirst(prefix.utf8.count)
        return (1...100).contains(rest.count)
            && rest.allSatisfy {
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-")
            }
    }

    private func text(_ value: JSONValue?, _ name: String, maxBytes: Int, _ masked: String) throws(Refusal) -> String? {
        guard let value, !value.isNull else { return nil }
        guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= maxBytes else {
            throw Refusal(reason: "`\(name)` must be a string of 1-\(maxBytes) bytes or null", maskedToken: masked)
        }
        return text
    }

    private func flag(_ value: JSONValue?, _ name: String, _ masked: String) throws(Refusal) -> Bool? {
        guard let value, !value.isNull else { return nil }
        guard let flag = value.boolValue else {
            throw Refusal(reason: "`\(name)` must be true or false", maskedToken: masked)
        }
        return flag
    }

    /// An RFC 3339 time with an offset, to the millisecond (the store's precision).
    private func date(_ value: JSONValue?, _ name: String, _ masked: String) throws(Refusal) -> Date? {
        guard let value, !value.isNull else { return nil }
        guard let text = value.stringValue, text.utf8.count <= RFC3339.maxLength, let parsed = RFC3339.parse(text)
        else {
            throw Refusal(
                reason: "`\(name)` must be an RFC 3339 time (2026-01-02T03:04:05.678Z) or null", maskedToken: masked)
        }
        return Date(millisecondsSince1970: Int64((parsed.timeIntervalSince1970 * 1000).rounded()))
    }
}
