import Foundation
import PushServer
import TestSupport
import WebPush
import XCTest

/// `instances[].fcm` and `instances[].web`: key files loaded at config time, every problem named by its field.
final class PlatformConfigTests: XCTestCase {
    private let instanceID = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
    private var directory = ""

    override func setUpWithError() throws {
        directory = try TestKeys.makeTemporaryDirectory()
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func config(_ sections: String) -> String {
        #"{"instances":[{"id":"\#(instanceID)","secretKey":"0123456789abcdef0123456789abcdef",\#(sections)}]}"#
    }

    private func errors(_ json: String) -> [String] {
        configErrors { _ = try ServerConfig.parse(Data(json.utf8)) }
    }

    private func write(_ name: String, _ text: String) throws -> String {
        let path = "\(directory)/\(name)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private func serviceAccountFile(projectID: String = "beams-test") throws -> String {
        let rsa = try TestKeys.makeRSA()
        defer { TestKeys.remove(rsa) }
        let escaped = rsa.privateKeyPEM.replacingOccurrences(of: "\n", with: "\\n")
        return try write(
            "sa.json",
            #"""
            {"type":"service_account","project_id":"\#(projectID)","private_key_id":"k1","private_key":"\#(escaped)",
             "client_email":"push@beams-test.iam.gserviceaccount.com","token_uri":"https://oauth2.googleapis.com/token"}
            """#)
    }

    private func vapidKeyFile() throws -> (path: String, publicKey: String) {
        let (pair, pem) = try VAPIDKeyPair.generate()
        return (try write("vapid.pem", pem), pair.publicKeyBase64URL)
    }

    func testFCMAndWebSectionsLoadTheirKeys() throws {
        let account = try serviceAccountFile()
        let (vapid, publicKey) = try vapidKeyFile()
        let (loaded, _) = try ServerConfig.parse(
            Data(
                config(
                    #"""
                    "fcm":{"serviceAccountFile":"\#(account)"},
                    "web":{"vapidKeyFile":"\#(vapid)","subject":"mailto:ops@example.com","allowedOrigins":["https://App.Example.com","http://localhost:8080"]}
                    """#
                ).utf8))
        let instance = try XCTUnwrap(loaded.instances.first)
        XCTAssertEqual(instance.fcm?.projectID, "beams-test")
        XCTAssertEqual(instance.web?.keyPair.publicKeyBase64URL, publicKey)
        XCTAssertEqual(instance.web?.subject.value, "mailto:ops@example.com")
        XCTAssertEqual(instance.allowedOrigins, .only(["https://app.example.com", "http://localhost:8080"]))
    }

    func testProjectIDOverrideAndDefaultOrigins() throws {
        let account = try serviceAccountFile()
        let (vapid, _) = try vapidKeyFile()
        let (loaded, _) = try ServerConfig.parse(
            Data(
                config(
                    #"""
                    "fcm":{"serviceAccountFile":"\#(account)","projectId":"other-project"},
                    "web":{"vapidKeyFile":"\#(vapid)","subject":"https://example.com/contact"}
                    """#
                ).utf8))
        XCTAssertEqual(loaded.instances.first?.fcm?.projectID, "other-project")
        XCTAssertEqual(loaded.instances.first?.allowedOrigins, .any)
    }

    func testInstanceWithoutWebSectionAllowsAnyOrigin() throws {
        let (loaded, _) = try ServerConfig.parse(Data(config(#""webhook":null"#).utf8))
        XCTAssertNil(loaded.instances.first?.web)
        XCTAssertNil(loaded.instances.first?.fcm)
        XCTAssertEqual(loaded.instances.first?.allowedOrigins, .any)
    }

    func testNamesEachBadFCMField() throws {
        XCTAssertEqual(
            errors(config(#""fcm":{}"#)),
            [
                "instances[0].fcm.serviceAccountFile: is required: the service-account JSON key file from the Firebase console"
            ])
        XCTAssertEqual(
            errors(config(#""fcm":{"serviceAccountFile":"/nonexistent/sa.json"}"#)),
            ["instances[0].fcm.serviceAccountFile: file not found (/nonexistent/sa.json)"])
        let notAccount = try write("user.json", #"{"type":"authorized_user"}"#)
        let problems = errors(config(#""fcm":{"serviceAccountFile":"\#(notAccount)"}"#))
        XCTAssertEqual(problems.count, 1)
        XCTAssertTrue(
            problems[0].hasPrefix(
                "instances[0].fcm.serviceAccountFile: service-account file has type \"authorized_user\""), problems[0])
        let account = try serviceAccountFile()
        XCTAssertEqual(
            errors(config(#""fcm":{"serviceAccountFile":"\#(account)","projectId":"Bad/Project"}"#)),
            ["instances[0].fcm.projectId: must be a Firebase project id (lower-case letters, digits, '-', '.', ':')"])
    }

    func testServiceAccountErrorsNeverShowTheKey() throws {
        let rsa = try TestKeys.makeRSA(bits: 1024)
        defer { TestKeys.remove(rsa) }
        let escaped = rsa.privateKeyPEM.replacingOccurrences(of: "\n", with: "\\n")
        let weak = try write(
            "weak.json",
            #"{"type":"service_account","project_id":"p","private_key_id":"k","private_key":"\#(escaped)","client_email":"a@b.c","token_uri":"https://oauth2.googleapis.com/token"}"#
        )
        let problems = errors(config(#""fcm":{"serviceAccountFile":"\#(weak)"}"#))
        XCTAssertEqual(problems.count, 1)
        XCTAssertTrue(problems[0].hasPrefix("instances[0].fcm.serviceAccountFile: "), problems[0])
        let body = rsa.privateKeyPEM.split(separator: "\n").dropFirst().first.map(String.init) ?? "-"
        XCTAssertFalse(problems[0].contains(body), "the private key must not appear in an error")
    }

    func testReadsSenderOverridesForFCMAndWeb() throws {
        let account = try serviceAccountFile()
        let (vapid, _) = try vapidKeyFile()
        let ca = try write("ca.pem", "-----BEGIN CERTIFICATE-----\n-----END CERTIFICATE-----\n")
        let (loaded, _) = try ServerConfig.parse(
            Data(
                config(
                    #"""
                    "fcm":{"serviceAccountFile":"\#(account)","endpointOverride":"https://127.0.0.1:8443","caFile":"\#(ca)"},
                    "web":{"vapidKeyFile":"\#(vapid)","subject":"mailto:ops@example.com","pushServiceHosts":["push.example.net","*.push.example.org"],
                           "allowedDestinations":["127.0.0.1"],"caFile":"\#(ca)"}
                    """#
                ).utf8))
        let instance = try XCTUnwrap(loaded.instances.first)
        XCTAssertEqual(instance.fcm?.endpointOverride, "https://127.0.0.1:8443")
        XCTAssertEqual(instance.fcm?.caFile, ca)
        XCTAssertEqual(
            instance.web?.pushServiceHosts, [.exact("push.example.net"), .subdomains(of: "push.example.org")])
        XCTAssertEqual(instance.web?.allowedDestinations.count, 1)
        XCTAssertEqual(instance.web?.caFile, ca)
    }

    func testNamesEachBadSenderOverride() throws {
        let account = try serviceAccountFile()
        let (vapid, _) = try vapidKeyFile()
        XCTAssertEqual(
            errors(config(#""fcm":{"serviceAccountFile":"\#(account)","endpointOverride":"http://fcm.example"}"#)),
            ["instances[0].fcm.endpointOverride: must be an https URL"])
        XCTAssertEqual(
            errors(config(#""fcm":{"serviceAccountFile":"\#(account)","caFile":"/nonexistent/ca.pem"}"#)),
            ["instances[0].fcm.caFile: file not found (/nonexistent/ca.pem)"])
        let web = #""vapidKeyFile":"\#(vapid)","subject":"mailto:a@example.com""#
        XCTAssertEqual(
            errors(config(#""web":{\#(web),"pushServiceHosts":"push.example"}"#)),
            ["instances[0].web.pushServiceHosts: must be an array of strings, got string"])
        XCTAssertEqual(
            errors(config(#""web":{\#(web),"pushServiceHosts":["ok.example","not a host"]}"#)),
            [#"instances[0].web.pushServiceHosts[1]: "not a host" is not a host name or *.domain"#])
        XCTAssertEqual(
            errors(config(#""web":{\#(web),"allowedDestinations":[5]}"#)),
            ["instances[0].web.allowedDestinations[0]: must be a string, got number"])
        let many = "[" + Array(repeating: #""a.example""#, count: 101).joined(separator: ",") + "]"
        XCTAssertEqual(
            errors(config(#""web":{\#(web),"pushServiceHosts":\#(many)}"#)),
            ["instances[0].web.pushServiceHosts: must list at most 100 entries"])
    }

    func testNamesEachBadWebField() throws {
        let (vapid, _) = try vapidKeyFile()
        XCTAssertEqual(
            Set(errors(config(#""web":{}"#))),
            [
                "instances[0].web.vapidKeyFile: is required: a P-256 private key PEM (create one with `push-server vapid-keygen FILE`)",
                "instances[0].web.subject: is required: a mailto: or https: contact for the push services (RFC 8292)",
            ])
        XCTAssertEqual(
            errors(config(#""web":{"vapidKeyFile":"\#(vapid)","subject":"mailto:me@localhost"}"#)),
            ["instances[0].web.subject: the VAPID subject must be a real contact, not localhost (Apple rejects it)"])
        let rsa = try TestKeys.makeRSA()
        defer { TestKeys.remove(rsa) }
        let problems = errors(
            config(#""web":{"vapidKeyFile":"\#(rsa.privateKeyPath)","subject":"mailto:a@example.com"}"#))
        XCTAssertEqual(problems.count, 1)
        XCTAssertTrue(problems[0].hasPrefix("instances[0].web.vapidKeyFile: "), problems[0])
        XCTAssertTrue(problems[0].contains("RSA"), problems[0])
    }

    func testRefusesMalformedAllowedOrigins() throws {
        let (vapid, _) = try vapidKeyFile()
        func origins(_ list: String) -> [String] {
            errors(
                config(
                    #""web":{"vapidKeyFile":"\#(vapid)","subject":"mailto:a@example.com","allowedOrigins":\#(list)}"#))
        }
        XCTAssertEqual(origins(#""*""#), [#"instances[0].web.allowedOrigins: must be an array of origins, got string"#])
        XCTAssertEqual(
            origins("[]"),
            [#"instances[0].web.allowedOrigins: must not be empty: use ["*"] for any origin or list the origins"#])
        XCTAssertEqual(
            origins(#"["*","https://a.example"]"#),
            [#"instances[0].web.allowedOrigins: "*" allows any origin and cannot be combined with others"#])
        XCTAssertEqual(
            origins(#"["https://a.example/"]"#),
            [
                #"instances[0].web.allowedOrigins[0]: "https://a.example/" must be scheme://host[:port] with no path, query or trailing slash"#
            ])
        XCTAssertEqual(
            origins(#"["ftp://a.example"]"#),
            [
                #"instances[0].web.allowedOrigins[0]: "ftp://a.example" must be "*" or an origin such as https://app.example.com"#
            ])
        XCTAssertEqual(
            origins(#"["https://a.example:99999"]"#),
            [#"instances[0].web.allowedOrigins[0]: "https://a.example:99999" has an invalid port"#])
        XCTAssertEqual(origins(#"[1]"#), [#"instances[0].web.allowedOrigins[0]: must be a string, got number"#])
        XCTAssertEqual(origins(#"["https://[::1]:8443"]"#), [])
    }

    func testExampleConfigStaysValid() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../config.example.json"
        ).path
        let (loaded, warnings) = try ServerConfig.load(path: path)
        XCTAssertNil(loaded.instances.first?.fcm)
        XCTAssertFalse(warnings.contains { $0.path.hasSuffix(".fcm") || $0.path.hasSuffix(".web") }, "\(warnings)")
    }
}
