import APNsClient
import XCTest

/// `ProviderTokenState.recovery`: the one rule device connections and broadcast calls follow after a token answer.
final class ProviderTokenRecoveryTests: XCTestCase {
    func testExpiredProviderTokenIsRefreshedOnceThenACredentialFault() {
        XCTAssertEqual(ProviderTokenState.recovery(after: .expiredProviderToken, refreshed: false), .refresh)
        XCTAssertEqual(ProviderTokenState.recovery(after: .expiredProviderToken, refreshed: true), .credentialFault)
    }

    func testTooManyProviderTokenUpdatesIsResolvedEvenAfterARefresh() {
        XCTAssertEqual(
            ProviderTokenState.recovery(after: .tooManyProviderTokenUpdates, refreshed: false),
            .resolveRejected)
        XCTAssertEqual(
            ProviderTokenState.recovery(after: .tooManyProviderTokenUpdates, refreshed: true),
            .resolveRejected)
    }

    func testOtherCredentialReasonsAreFaultsAndTheRestNotTheTokens() {
        for reason: APNsReason in [
            .invalidProviderToken, .missingProviderToken, .badEnvironmentKeyIdInToken,
            .unrelatedKeyIdInToken, .badCertificate, .badCertificateEnvironment,
        ] {
            XCTAssertEqual(ProviderTokenState.recovery(after: reason, refreshed: false), .credentialFault, "\(reason)")
        }
        for reason: APNsReason? in [nil, .badDeviceToken, .tooManyRequests, .internalServerError, .unregistered] {
            XCTAssertNil(ProviderTokenState.recovery(after: reason, refreshed: false), "\(String(describing: reason))")
        }
    }
}
