import BeamsModel
import HTTPClient
import JSON
import JWTSigner
import WebPush
import XCTest

/// Tokens as the device API stores them: FCM tokens checked (InvalidToken for anything that is not a registration
/// token), web tokens decoded from every base64 form to one canonical subscription.
final class DeviceTokenTests: XCTestCase {
    static let fcmToken =
        "dGVzdC1pbnN0YW5jZQ:APA91bHPRgkF3JUikC4ENAHEeMrd41Zxv3hVZjC9KtT8OvPVGJ-hQMRKRrZuJAEcl7B338qju59zJMknoS8"
        + "VANuzJ3Sxgv8OZtwhqI1eDhBBaSB5t8HLIPkKdHdmcoDL2q8BwBjDNQZcYvuKxE_zQ0ms3nbmH9SDLw"

    private func expectError(
        _ body: () throws(BeamsError) -> String, title: String, contains text: String,
        file: StaticString = #filePath, line: UInt = #line
    ) {
        do {
            let value = try body()
            XCTFail("accepted: \(value)", file: file, line: line)
        } catch {
            XCTAssertEqual(error.statusCode, 400, file: file, line: line)
            XCTAssertEqual(error.title, title, file: file, line: line)
            XCTAssertTrue(error.detail.contains(text), error.detail, file: file, line: line)
        }
    }

    func testFCMRegistrationTokenIsKeptAsSent() throws {
        XCTAssertEqual(try DeviceToken.fcm(Self.fcmToken), Self.fcmToken)
    }

    func testFCMTokenOfWrongLengthOrBytesIsInvalidToken() {
        expectError(
            { () throws(BeamsError) in try DeviceToken.fcm("short") }, title: "InvalidToken", contains: "8 to 4096")
        expectError(
            { () throws(BeamsError) in try DeviceToken.fcm(String(repeating: "a", count: 4097)) },
            title: "InvalidToken", contains: "8 to 4096")
        expectError(
            { () throws(BeamsError) in try DeviceToken.fcm("abc def ghi jkl") }, title: "InvalidToken",
            contains: "printable")
        expectError(
            { () throws(BeamsError) in try DeviceToken.fcm("abcdefgh\u{0}ijkl") }, title: "InvalidToken",
            contains: "printable")
        expectError(
            { () throws(BeamsError) in try DeviceToken.fcm("tökentökentöken") }, title: "InvalidToken",
            contains: "printable")
    }

    func testFirebaseInstallationAuthTokenIsInvalidToken() {
        let jwt = "eyJhbGciOiJFUzI1NiIsInR5cCI6IkpXVCJ9.eyJhcHBJZCI6IjE6MTIzIn0.c2lnbmF0dXJlLWJ5dGVz"
        expectError({ () throws(BeamsError) in try DeviceToken.fcm(jwt) }, title: "InvalidToken", contains: "JWT")
        // Dots alone do not make a JWT.
        XCTAssertEqual(try DeviceToken.fcm("abc.def.ghi.jkl"), "abc.def.ghi.jkl")
    }

    // MARK: Web

    /// A real subscription's shape: keys of a fresh P-256 key pair and 16 random bytes.
    static func subscriptionJSON(endpoint: String = "https://fcm.googleapis.com/fcm/send/abc", padded: Bool = false)
        throws -> (String, String, String)
    {
        var p256dh = try VAPIDKeyPair.generate().keyPair.publicKeyBase64URL
        var auth = Base64URL.encode((0..<16).map { UInt8($0 * 7) })
        if padded {
            p256dh += "="
            auth += "=="
        }
        let json =
            #"{"endpoint":"\#(endpoint)","expirationTime":null,"keys":{"p256dh":"\#(p256dh)","auth":"\#(auth)"}}"#
        return (json, p256dh, auth)
    }

    func testWebTokenDecodesFromEveryBase64FormToOneCanonicalSubscription() throws {
        let (json, p256dh, auth) = try Self.subscriptionJSON()
        let standard = Data(json.utf8).base64EncodedString()
        let unpadded = standard.replacingOccurrences(of: "=", with: "")
        let urlSafe = unpadded.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let canonical = try DeviceToken.web(standard)
        XCTAssertEqual(try DeviceToken.web(unpadded), canonical)
        XCTAssertEqual(try DeviceToken.web(urlSafe), canonical)
        XCTAssertEqual(
            canonical,
            #"{"endpoint":"https://fcm.googleapis.com/fcm/send/abc","keys":{"auth":"\#(auth)","p256dh":"\#(p256dh)"}}"#)
        // Padded keys and another member order are the same subscription.
        let (paddedJSON, _, _) = try Self.subscriptionJSON(padded: true)
        let reordered = try JSONValue(parsing: Array(paddedJSON.utf8))
        XCTAssertNotNil(try DeviceToken.web(Data(reordered.serialized()).base64EncodedString()))
    }

    func testWebTokenThatIsNotASubscriptionIsRefusedWithTheReason() throws {
        func web(_ text: String) -> () throws(BeamsError) -> String {
            { () throws(BeamsError) in try DeviceToken.web(text) }
        }
        func b64(_ text: String) -> String { Data(text.utf8).base64EncodedString() }
        expectError(web("web-token"), title: "Bad request", contains: "not base64")
        expectError(web("!!!!"), title: "Bad request", contains: "not base64")
        expectError(web(b64("[1,2]")), title: "Bad request", contains: "JSON object")
        expectError(web(b64(#"{"keys":{}}"#)), title: "Bad request", contains: "no endpoint")
        expectError(
            web(b64(#"{"endpoint":"https://a.example/x","keys":{"p256dh":1}}"#)), title: "Bad request",
            contains: "keys.p256dh")
        expectError(web(String(repeating: "A", count: 4100)), title: "Bad request", contains: "longer than 4096")
        let (json, _, _) = try Self.subscriptionJSON(endpoint: "http://push.example.net/send/abc")
        expectError(web(b64(json)), title: "Bad request", contains: "https")
        let (_, p256dh, _) = try Self.subscriptionJSON()
        let tampered = #"{"endpoint":"https://a.example/x","keys":{"p256dh":"\#(p256dh)","auth":"AAAA"}}"#
        expectError(web(b64(tampered)), title: "Bad request", contains: "auth")
        let offCurve =
            #"{"endpoint":"https://a.example/x","keys":{"p256dh":"BA\#(String(repeating: "A", count: 85))","auth":"AAAAAAAAAAAAAAAAAAAAAA"}}"#
        expectError(web(b64(offCurve)), title: "Bad request", contains: "p256dh")
    }

    func testWebEndpointOutsideThePushServicesOrOnAnotherPortIsRefusedAtRegistration() throws {
        func web(
            _ endpoint: String, hosts: WebPushHostAllowlist = .knownPushServices,
            policy: DestinationPolicy = DestinationPolicy()
        ) throws -> () throws(BeamsError) -> String {
            let (json, _, _) = try Self.subscriptionJSON(endpoint: endpoint)
            let token = Data(json.utf8).base64EncodedString()
            return { () throws(BeamsError) in try DeviceToken.web(token, hosts: hosts, policy: policy) }
        }
        for endpoint in [
            "https://169.254.169.254/latest/meta-data/", "https://127.0.0.1:8443/push", "https://push.internal/x",
            "https://fcm.googleapis.com:8443/fcm/send/x", "https://fcm.googleapis.com.attacker.example/x",
        ] {
            expectError(try web(endpoint), title: "Bad request", contains: "not an allowed push service")
        }
        XCTAssertNoThrow(try web("https://fcm.googleapis.com:443/fcm/send/x")())
        XCTAssertNoThrow(try web("https://updates.push.services.mozilla.com/wpush/v2/x")())
        // An operator's own push service on its own port, named with that port.
        let own = try WebPushHostAllowlist(parsing: ["push.internal:8443", "10.1.2.3:8443"])
        XCTAssertNoThrow(try web("https://push.internal:8443/x", hosts: own)())
        expectError(
            try web("https://push.internal/x", hosts: own), title: "Bad request",
            contains: "not an allowed push service")
        // A literal address must also pass the address rules the sender applies when it connects.
        expectError(
            try web("https://10.1.2.3:8443/x", hosts: own), title: "Bad request", contains: "web.allowedDestinations")
        let allowed = DestinationPolicy(allowances: [try .init(parsing: "10.0.0.0/8")])
        XCTAssertNoThrow(try web("https://10.1.2.3:8443/x", hosts: own, policy: allowed)())
    }
}
