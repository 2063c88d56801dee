import APNsClient
import Foundation
import TLSIdentity
import TestSupport
import XCTest

/// Certificate credentials against the strict mock in client-certificate mode (`--client-ca`): the certificate is
/// presented in the TLS handshake, requests carry no provider token.
final class APNsCertificateAuthTests: MockAPNsTestCase {
    private static let shared = Result { try APNsTestCertificates.make() }
    private var certs: APNsTestCertificates!

    override func setUpWithError() throws {
        try super.setUpWithError()
        certs = try Self.shared.get()
    }

    override class func tearDown() {
        (try? shared.get())?.remove()
    }

    private func startCertificateMock() throws {
        // The mock still knows the token key, so a request that carried a JWT would be accepted: the assertions
        // below check that none was sent.
        mock = try MockAPNs.start(
            teamID: teamID, keys: [(keyID: keyID, publicKeyPath: pair.publicKeyPath)],
            topics: [topic], extraArguments: ["--client-ca", certs["ca"]])
    }

    private func p12Credentials() throws -> APNsCredentials {
        APNsCredentials(certificate: try TLSClientIdentity.pkcs12(file: certs["p12"], password: certs["password"]))
    }

    func testDeliversWithAPKCS12AndSendsNoAuthorizationHeader() async throws {
        try startCertificateMock()
        let client = try makeClient()
        let credentials = try p12Credentials()
        XCTAssertEqual(credentials.kind, .certificate)
        XCTAssertFalse(credentials.supportsTokenOnlyPushTypes)
        let results = await submitAll(client, (0..<5).map { alert(token($0)) }, credentials: credentials)
        XCTAssertEqual(results.map { $0.response?.status }, Array(repeating: 200, count: 5))
        let requests = try mock.requests()
        XCTAssertEqual(requests.count, 5)
        XCTAssertTrue(requests.allSatisfy { $0.headers["authorization"] == nil && $0.jwt == nil }, "\(requests)")
        XCTAssertEqual(client.stats().tokenRefreshes, 0)
    }

    func testDeliversWithAPEMPairAndTheVoIPTopicOfTheCertificate() async throws {
        try startCertificateMock()
        let client = try makeClient()
        let credentials = APNsCredentials(
            certificate: try TLSClientIdentity.pem(
                certificateFile: certs["cert"], keyFile: certs["key"], password: nil))
        let voip = APNsRequest(
            deviceToken: token(1), payload: Array(#"{"aps":{}}"#.utf8), topic: "com.example.app.voip",
            pushType: .voip)
        let results = await submitAll(client, [alert(token(0)), voip], credentials: credentials)
        XCTAssertEqual(results.map { $0.response?.status }, [200, 200])
    }

    func testCertificateCredentialsGetNoTokenManagerAndBroadcastsRefuseThem() async throws {
        let managers = ProviderTokenManagers()
        let credentials = try p12Credentials()
        XCTAssertNil(managers.manager(for: credentials))
        XCTAssertEqual(managers.count, 0)
        // Broadcasts are token-only: refused before any connection, with the certificate signer's own words.
        var configuration = APNsBroadcastClient.Configuration()
        configuration.tokenManagers = managers
        let broadcaster = try APNsBroadcastClient(configuration: configuration)
        let endpoints = APNsBroadcastEndpoints(managementURL: "https://127.0.0.1:1", sendURL: "https://127.0.0.1:1")
        let result = await broadcaster.manage(
            .list, bundleID: APNsBundleID(topic)!, endpoints: endpoints,
            credentials: credentials)
        await broadcaster.shutdown()
        XCTAssertEqual(
            result, .failure(.configuration(.signingFailed("certificate credentials sign no provider tokens"))))
        XCTAssertEqual(managers.count, 0)
    }

    func testTokenOnlyPushTypesAreRefusedBeforeSending() async throws {
        try startCertificateMock()
        let client = try makeClient()
        let live = APNsRequest(
            deviceToken: token(0), payload: Array(#"{"aps":{"event":"update"}}"#.utf8),
            topic: topic, pushType: .liveactivity)
        let result = await client.send(live, credentials: try p12Credentials(), environment: environment)
        XCTAssertEqual(result, .failure(.invalidRequest(.pushTypeNeedsTokenAuthentication(.liveactivity))))
        XCTAssertEqual(try mock.requests().count, 0)
        XCTAssertTrue(result.description.contains("token (.p8) authentication"), result.description)
    }

    func testTopicOutsideTheCertificateGetsBadTopicFromAPNs() async throws {
        try startCertificateMock()
        let client = try makeClient()
        let request = APNsRequest(
            deviceToken: token(0), payload: Array(#"{"aps":{"alert":"x"}}"#.utf8),
            topic: "com.example.elsewhere", pushType: .alert)
        let result = await client.send(request, credentials: try p12Credentials(), environment: environment)
        XCTAssertEqual(result.response?.status, 400)
        XCTAssertEqual(result.response?.reason, .badTopic)
    }

    func testExpiredCertificateFailsTheHandshakeWithoutAResponse() async throws {
        try startCertificateMock()
        let client = try makeClient(retry: APNsRetryPolicy(maxAttempts: 1))
        let expired = APNsCredentials(
            certificate: try TLSClientIdentity.pkcs12(
                file: certs["expired_p12"],
                password: certs["password"]))
        let result = await client.send(alert(token(0)), credentials: expired, environment: environment)
        guard case .failure(.transport) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(try mock.requests().count, 0)
    }

    func testCertificateAndTokenCredentialsNeverShareAPool() async throws {
        // A token pool presents no client certificate: the mock refuses its handshake while the certificate pool
        // of the same client keeps delivering.
        try startCertificateMock()
        let client = try makeClient(retry: APNsRetryPolicy(maxAttempts: 1))
        let first = await client.send(alert(token(0)), credentials: try p12Credentials(), environment: environment)
        XCTAssertEqual(first.response?.status, 200)
        let tokenResult = await client.send(alert(token(1)), credentials: credentials, environment: environment)
        guard case .failure(.transport) = tokenResult else { return XCTFail("\(tokenResult)") }
        let again = await client.send(alert(token(2)), credentials: try p12Credentials(), environment: environment)
        XCTAssertEqual(again.response?.status, 200)
        XCTAssertEqual(client.stats().pools, 2)
    }
}
