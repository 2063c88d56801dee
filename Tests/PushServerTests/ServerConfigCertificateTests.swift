import Foundation
import Locking
import Logging
import Observability
import TestSupport
import XCTest

@testable import PublishEngine
@testable import PushServer

/// `instances[].apns.certificate`: certificate authentication instead of the `.p8` key, with field-precise errors,
/// and the expiry reporting built on it (gauge, daily log warning).
final class ServerConfigCertificateTests: XCTestCase {
    private static let shared = Result { try APNsTestCertificates.make() }
    private var certs: APNsTestCertificates!
    private let id = "8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11"
    private let env = ["P12_PASSWORD": "p12-secret", "WRONG": "not-it"]

    override func setUpWithError() throws {
        certs = try Self.shared.get()
    }

    override class func tearDown() {
        (try? shared.get())?.remove()
    }

    private func json(apns: String) -> String {
        #"{"instances":[{"id":"\#(id)","secretKey":"0123456789abcdef0123456789abcdef","apns":\#(apns)}]}"#
    }

    private func p12(_ name: String = "p12", password: String = #""passwordEnv":"P12_PASSWORD""#, extra: String = "")
        -> String
    {
        json(apns: #"{\#(extra)"certificate":{"p12File":"\#(certs[name])",\#(password)}}"#)
    }

    private func parse(_ json: String) throws(ConfigError) -> (ServerConfig, warnings: [ConfigIssue]) {
        try ServerConfig.parse(Data(json.utf8), environment: env)
    }

    private func errors(_ json: String) -> [String] {
        configErrors { _ = try parse(json) }
    }

    func testLoadsAPKCS12WithItsPasswordFromTheEnvironmentAndTakesTheUIDAsTopic() throws {
        let (config, warnings) = try parse(p12())
        let apns = try XCTUnwrap(config.instances.first?.apns)
        XCTAssertTrue(apns.hasCredentials)
        XCTAssertEqual(apns.topic, "com.example.app")
        XCTAssertEqual(apns.certificate?.identity.certificate.uid, "com.example.app")
        XCTAssertEqual(apns.certificate?.files, [certs["p12"]])
        XCTAssertFalse(warnings.contains { $0.path.hasPrefix("instances[0].apns") }, "\(warnings)")
        let runtime = try InstanceRuntime(config: config.instances[0])
        XCTAssertEqual(runtime.credentials?.kind, .certificate)
        XCTAssertEqual(runtime.credentials?.supportsTokenOnlyPushTypes, false)
    }

    func testLoadsAPEMPairWithAnEncryptedKeyAndItsPasswordFile() throws {
        let passwordFile = certs.directory + "/key-password.txt"
        try (certs["key_password"] + "\n").write(toFile: passwordFile, atomically: true, encoding: .utf8)
        let (config, _) = try parse(
            json(
                apns:
                    #"{"topic":"com.example.app.voip","certificate":{"certificateFile":"\#(certs["encrypted_cert"])","keyFile":"\#(certs["encrypted_key"])","passwordFile":"\#(passwordFile)"}}"#
            ))
        XCTAssertEqual(config.instances[0].apns?.topic, "com.example.app.voip")
        XCTAssertNotNil(config.instances[0].apns?.certificate)
    }

    func testWrongPasswordNamesThePasswordFieldAndNeverThePassword() {
        let found = errors(p12(password: #""passwordEnv":"WRONG""#))
        XCTAssertEqual(
            found,
            ["instances[0].apns.certificate.passwordEnv: wrong password for the PKCS#12 file (mac verify failure)"])
        XCTAssertFalse(found.joined().contains("not-it"))
    }

    func testLegacyPKCS12ErrorCarriesTheReexportCommands() {
        let found = errors(p12("legacy_p12"))
        XCTAssertEqual(found.count, 1)
        XCTAssertTrue(
            found[0].hasPrefix(
                "instances[0].apns.certificate.p12File: the .p12 is encrypted with a legacy algorithm (RC2-40)"),
            found[0])
        XCTAssertTrue(found[0].contains("openssl pkcs12 -legacy -in old.p12 -nodes -out tmp.pem"), found[0])
    }

    func testExpiredAndNotYetValidCertificatesAreErrors() {
        let expired = errors(p12("expired_p12"))
        XCTAssertEqual(expired.count, 1)
        XCTAssertTrue(expired[0].hasPrefix("instances[0].apns.certificate: the certificate expired on "), expired[0])
        let future = errors(
            json(
                apns:
                    #"{"certificate":{"certificateFile":"\#(certs["future_cert"])","keyFile":"\#(certs["future_key"])"}}"#
            ))
        XCTAssertEqual(future.count, 1)
        XCTAssertTrue(
            future[0].hasPrefix("instances[0].apns.certificate: the certificate is not valid before "), future[0])
    }

    func testCertificateExpiringWithin30DaysIsAWarning() throws {
        let (_, warnings) = try parse(p12("soon_p12"))
        let warning = try XCTUnwrap(warnings.first { $0.path == "instances[0].apns.certificate" })
        XCTAssertTrue(
            warning.message.hasPrefix("the certificate expires in 9 days")
                || warning.message.hasPrefix("the certificate expires in 10 days"),
            warning.message)
    }

    func testTopicOutsideTheCertificateIsAnError() {
        XCTAssertEqual(
            errors(p12(extra: #""topic":"com.example.other","#)),
            [
                "instances[0].apns.topic: com.example.other is not in the certificate (it covers: com.example.app, "
                    + "com.example.app.voip, com.example.app.complication); APNs would answer BadTopic"
            ])
    }

    func testKeyAndCertificateTogetherIsAnError() {
        XCTAssertEqual(
            errors(p12(extra: #""teamId":"ABCDE12345","keyId":"KEY1234567","keyPath":"/x.p8","#)),
            [
                "instances[0].apns.certificate: give either the .p8 key (teamId, keyId, keyPath) or certificate, not both"
            ])
    }

    func testEachMalformedCertificateSectionNamesItsField() {
        let cert = certs["cert"]
        let key = certs["key"]
        let cases: [(String, String)] = [
            (
                #"{}"#,
                "instances[0].apns.certificate: give p12File (a .p12 and its password) or certificateFile and keyFile (PEM)"
            ),
            (
                #"{"p12File":"\#(certs["p12"])","certificateFile":"\#(cert)"}"#,
                "instances[0].apns.certificate: give either p12File or certificateFile, not both"
            ),
            (
                #"{"certificateFile":"\#(cert)"}"#,
                "instances[0].apns.certificate.keyFile: is required with certificateFile: the certificate's PEM private key"
            ),
            (
                #"{"p12File":"\#(certs["p12"])"}"#,
                "instances[0].apns.certificate.passwordFile: passwordFile or passwordEnv is required: the .p12's password"
            ),
            (
                #"{"p12File":"\#(certs["p12"])","password":"p12-secret"}"#,
                "instances[0].apns.certificate.password: put the password in a file (passwordFile) or an environment variable (passwordEnv), not in the configuration"
            ),
            (
                #"{"certificateFile":"\#(cert)","keyFile":"\#(certs["other_key"])"}"#,
                "instances[0].apns.certificate.keyFile: the private key does not belong to the certificate"
            ),
            (
                #"{"certificateFile":"\#(key)","keyFile":"\#(key)"}"#,
                "instances[0].apns.certificate.certificateFile: not a PEM certificate (no readable -----BEGIN CERTIFICATE----- block)"
            ),
            (
                #"{"certificateFile":"\#(certs["encrypted_cert"])","keyFile":"\#(certs["encrypted_key"])"}"#,
                "instances[0].apns.certificate.keyFile: the private key is encrypted: configure passwordFile or passwordEnv"
            ),
            (
                #"{"p12File":"/nonexistent.p12","passwordEnv":"P12_PASSWORD"}"#,
                "instances[0].apns.certificate.p12File: file not found (/nonexistent.p12)"
            ),
            (
                #"{"p12File":"\#(certs["p12"])","passwordEnv":"UNSET_VARIABLE"}"#,
                "instances[0].apns.certificate.passwordEnv: environment variable UNSET_VARIABLE is not set"
            ),
            (
                #"{"p12File":"\#(cert)","passwordEnv":"P12_PASSWORD"}"#,
                "instances[0].apns.certificate.p12File: not a PKCS#12"
            ),
        ]
        for (section, expected) in cases {
            let found = errors(json(apns: #"{"certificate":\#(section)}"#))
            XCTAssertEqual(found.count, 1, "\(section): \(found)")
            XCTAssertTrue(found.first?.hasPrefix(expected) ?? false, "\(section):\n  \(found)\nexpected \(expected)")
        }
    }

    func testExpiryGaugeAndDailyWarningFollowTheClock() throws {
        let (config, _) = try parse(p12())
        let instances = try config.instances.map { try InstanceRuntime(config: $0) }
        let info = try XCTUnwrap(APNsCertificateHealth.certificate(instances[0]))
        let clock = Locked(Date())
        let now: @Sendable () -> Date = { clock.withLock { $0 } }
        let metrics = Metrics()
        APNsCertificateHealth.declare(metrics)
        APNsCertificateHealth.collect(into: metrics, instances: { instances }, clock: now)
        _ = metrics.render()
        let left = metrics.value(.apnsCertificateExpiry, ["instance": id])
        XCTAssertEqual(left, info.notAfter.timeIntervalSince(now()).rounded(), accuracy: 1)

        let sink = CapturingLogSink()
        let watch = CertificateExpiryWatch(
            instances: { instances }, clock: now,
            logger: Logger(label: "apns", level: .info, sink: sink))
        XCTAssertEqual(watch.checkOnce(), 0, "a year left: nothing to say")
        clock.withLock { $0 = info.notAfter.addingTimeInterval(-20 * 86_400) }
        XCTAssertEqual(watch.checkOnce(), 1)
        XCTAssertTrue(sink.lines.last?.contains("APNs certificate expires soon") ?? false, "\(sink.lines)")
        XCTAssertTrue(sink.lines.last?.contains("daysLeft=20") ?? false, "\(sink.lines)")
        XCTAssertFalse(APNsCertificateHealth.json(instances[0], now: now()).objectValue?["warning"]?.isNull ?? true)
        clock.withLock { $0 = info.notAfter.addingTimeInterval(60) }
        XCTAssertEqual(watch.checkOnce(), 1)
        XCTAssertTrue(sink.lines.last?.contains("APNs certificate unusable") ?? false, "\(sink.lines)")
        _ = metrics.render()
        XCTAssertEqual(metrics.value(.apnsCertificateExpiry, ["instance": id]), -60)
        XCTAssertFalse(APNsCertificateHealth.usable(info, now: now()))
    }

    func testTheWatchAndTheGaugeFollowTheServedSetAndAnnounceANewCertificateOnceAtOnce() throws {
        let (config, _) = try parse(p12())
        let runtime = try InstanceRuntime(config: config.instances[0])
        let info = try XCTUnwrap(APNsCertificateHealth.certificate(runtime))
        let served = Locked<[InstanceRuntime]>([])
        let now: @Sendable () -> Date = { info.notAfter.addingTimeInterval(-10 * 86_400) }
        let metrics = Metrics()
        APNsCertificateHealth.declare(metrics)
        APNsCertificateHealth.collect(into: metrics, instances: { served.withLock { $0 } }, clock: now)
        let sink = CapturingLogSink()
        let watch = CertificateExpiryWatch(
            instances: { served.withLock { $0 } }, clock: now,
            logger: Logger(label: "apns", level: .info, sink: sink))
        watch.follow()
        XCTAssertTrue(sink.lines.isEmpty)
        XCTAssertFalse(metrics.render().contains(#"instance="\#(id)""#))

        // An instance with a certificate comes at run time: announced and warned about at once, once.
        served.withLock { $0 = [runtime] }
        watch.follow()
        XCTAssertEqual(sink.lines.count, 2, "\(sink.lines)")
        XCTAssertTrue(
            sink.lines[0].contains("APNs certificate") && sink.lines[0].contains("instance=\(id)"), "\(sink.lines)")
        XCTAssertTrue(
            sink.lines[1].contains("APNs certificate expires soon") && sink.lines[1].contains("daysLeft=10"),
            "\(sink.lines)")
        watch.follow()
        XCTAssertEqual(sink.lines.count, 2, "a certificate is announced once")
        XCTAssertEqual(watch.checkOnce(), 1, "the daily check covers it")
        _ = metrics.render()
        XCTAssertEqual(metrics.value(.apnsCertificateExpiry, ["instance": id]), 10 * 86_400)
    }

    // MARK: Environment markers

    private func pem(_ name: String, _ extra: String) -> String {
        json(
            apns:
                #"{\#(extra)"certificate":{"certificateFile":"\#(certs["\(name)_cert"])","keyFile":"\#(certs["\(name)_key"])"}}"#
        )
    }

    private func issues(_ json: String) -> [ConfigIssue] {
        do {
            return try parse(json).warnings.filter { $0.path.hasPrefix("instances[0].apns") }
        } catch {
            return error.issues
        }
    }

    func testFitTableForEveryMarkerSetAndDefaultEnvironment() {
        typealias Fit = CertificateEnvironmentFit
        XCTAssertEqual(Fit(.both, defaultEnvironment: .sandbox), .covered)
        XCTAssertEqual(Fit(.both, defaultEnvironment: .production), .covered)
        XCTAssertEqual(Fit(.sandbox, defaultEnvironment: .sandbox), .partial(missing: .production))
        XCTAssertEqual(Fit(.production, defaultEnvironment: .production), .partial(missing: .sandbox))
        XCTAssertEqual(Fit(.production, defaultEnvironment: .sandbox), .mismatch(defaultEnvironment: .sandbox))
        XCTAssertEqual(Fit(.sandbox, defaultEnvironment: .production), .mismatch(defaultEnvironment: .production))
        XCTAssertEqual(Fit(.none, defaultEnvironment: .production), .unmarked)
        XCTAssertEqual(Fit.mismatch(defaultEnvironment: .sandbox).severity(endpointOverride: false), .error)
        XCTAssertEqual(Fit.mismatch(defaultEnvironment: .sandbox).severity(endpointOverride: true), .warning)
        XCTAssertEqual(Fit.partial(missing: .sandbox).severity(endpointOverride: false), .warning)
        XCTAssertNil(Fit.unmarked.severity(endpointOverride: false))
        XCTAssertNil(Fit.covered.message(endpointOverride: false))
    }

    func testProductionOnlyCertificateOnASandboxInstanceIsRefused() {
        XCTAssertEqual(
            errors(pem("production", #""defaultEnvironment":"sandbox","#)),
            [
                "instances[0].apns.certificate: the certificate is marked for production only, but the instance sends to "
                    + "sandbox (defaultEnvironment: every device registered without an environment): APNs would answer 403 "
                    + "BadCertificateEnvironment there; use a certificate for sandbox (an \"Apple Push Notification service "
                    + "SSL (Sandbox & Production)\" certificate covers both) or change defaultEnvironment"
            ])
    }

    func testSandboxOnlyCertificateOnAProductionInstanceIsRefused() {
        let found = errors(pem("single", ""))
        XCTAssertEqual(found.count, 1, "\(found)")
        XCTAssertTrue(
            found.first?.hasPrefix(
                "instances[0].apns.certificate: the certificate is marked for sandbox only, "
                    + "but the instance sends to production") ?? false, "\(found)")
    }

    func testMismatchBehindAnEndpointOverrideOnlyWarns() throws {
        let found = issues(
            pem("production", #""defaultEnvironment":"sandbox","endpointOverride":"https://127.0.0.1:9","#))
        XCTAssertEqual(found.map(\.severity), [.warning], "\(found)")
        XCTAssertTrue(
            found[0].message.hasSuffix(
                "(endpointOverride is set: which environment that host plays is not "
                    + "known here, so it is not refused)"), found[0].message)
    }

    func testCertificateForTheDefaultEnvironmentOnlyWarnsAboutTheOther() {
        let found = issues(pem("production", ""))
        XCTAssertEqual(found.map(\.severity), [.warning], "\(found)")
        XCTAssertTrue(
            found[0].message.hasPrefix(
                "the certificate is marked for production only: deliveries to sandbox "
                    + "(devices registered with environment \"sandbox\", and the retry there after BadDeviceToken) fail with 403 "
                    + "BadCertificateEnvironment"), found[0].message)
        XCTAssertEqual(issues(pem("single", #""defaultEnvironment":"sandbox","#)).map(\.severity), [.warning])
    }

    func testUnmarkedCertificateIsANoteInTheSummaryReadyAndLogNotAnIssue() throws {
        let (config, warnings) = try parse(pem("unmarked", ""))
        XCTAssertFalse(warnings.contains { $0.path.hasPrefix("instances[0].apns") }, "\(warnings)")
        let apns = try XCTUnwrap(config.instances[0].apns)
        let info = try XCTUnwrap(apns.certificate?.identity.certificate)
        let summary = APNsCertificateHealth.summary(info, apns, now: Date())
        XCTAssertTrue(
            summary.contains("environments none (note: the certificate carries no environment marker"), summary)
        let runtime = try InstanceRuntime(config: config.instances[0])
        let ready = try XCTUnwrap(APNsCertificateHealth.json(runtime, now: Date()).objectValue)
        XCTAssertEqual(ready["environments"], .array([]))
        XCTAssertTrue(ready["environmentNote"]?.stringValue?.contains("no environment marker") ?? false, "\(ready)")

        let sink = CapturingLogSink()
        CertificateExpiryWatch(instances: { [runtime] }, logger: Logger(label: "apns", level: .info, sink: sink))
            .announce()
        XCTAssertEqual(sink.lines.count, 1)
        XCTAssertTrue(
            sink.lines[0].contains("APNs certificate") && sink.lines[0].contains("environments=none"), "\(sink.lines)")
    }

    func testCertificateMarkedForBothHasNoNoteAndListsBothEnvironments() throws {
        let (config, _) = try parse(p12())
        let runtime = try InstanceRuntime(config: config.instances[0])
        let ready = try XCTUnwrap(APNsCertificateHealth.json(runtime, now: Date()).objectValue)
        XCTAssertEqual(ready["environments"], .array([.string("sandbox"), .string("production")]))
        XCTAssertEqual(ready["environmentNote"], .null)
        let apns = try XCTUnwrap(config.instances[0].apns)
        let summary = APNsCertificateHealth.summary(
            try XCTUnwrap(apns.certificate?.identity.certificate), apns, now: Date())
        XCTAssertTrue(summary.contains("; environments sandbox+production; notAfter "), summary)
    }
}
