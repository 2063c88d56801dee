import Foundation
import JSON
import PushStore

/// The checks on a Live Activity token registration's body (`PUT …/live-activities/…`): the update token and its
/// expiry. Pure, so the fuzzers reach them without a server.
public enum LiveActivityTokenBody {
    /// The token as lower-case hex (the device token rules: 16-400 hex digits, even).
    public static func token(_ body: [String: JSONValue]) throws(BeamsError) -> String {
        guard let value = body["token"], !value.isNull else { throw BeamsError.schema("token", "token is required") }
        guard let text = value.stringValue, text.utf8.count <= 400, let token = try? DeviceToken.apns(text) else {
            throw BeamsError(400, "Bad request", "`token` must be the Live Activity token as 16-400 hexadecimal digits")
        }
        return token
    }

    /// `expiresAt` as RFC 3339 or epoch seconds, in the future; at most (and by default) 12 hours ahead, the
    /// longest an activity lives (8 h active + 4 h on the Lock Screen).
    public static func expiresAt(_ value: JSONValue?, now: Date) throws(BeamsError) -> Date {
        let cap = now.addingTimeInterval(LiveActivityToken.maxUpdateTokenLifetime)
        guard let value, !value.isNull else { return cap }
        let date: Date
        if let text = value.stringValue {
            guard text.utf8.count <= RFC3339.maxLength, let parsed = RFC3339.parse(text) else {
                throw BeamsError.schema("expiresAt", "Must be an RFC 3339 date-time or epoch seconds")
            }
            date = parsed
        } else if let seconds = value.intValue, (0...253_402_300_799).contains(seconds) {
            date = Date(timeIntervalSince1970: TimeInterval(seconds))
        } else {
            throw BeamsError.schema("expiresAt", "Must be an RFC 3339 date-time or epoch seconds")
        }
        guard date > now else { throw BeamsError.schema("expiresAt", "Must be in the future") }
        return min(date, cap)
    }
}
