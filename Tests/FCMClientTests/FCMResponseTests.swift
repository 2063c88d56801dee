import FCMClient
import HTTPClient
import JSON
import XCTest

/// FCM v1's error table, with bodies shaped like Google's (`google.rpc.Status` plus `FcmError` details).
final class FCMResponseTests: XCTestCase {
    private func errorBody(
        _ code: Int, _ status: String, _ message: String, fcm: String? = nil,
        fieldViolation: String? = nil
    ) -> [UInt8] {
        var details: [JSONValue] = []
        if let fcm {
            details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(fcm)])
        }
        if let fieldViolation {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": .string(fieldViolation), "description": "bad"]],
            ])
        }
        let error: JSONValue = [
            "code": .int(code), "message": .string(message), "status": .string(status),
            "details": .array(details),
        ]
        return JSONValue.object(["error": error]).serialized()
    }

    private func info(_ http: Int, _ status: String?, _ code: String?, _ message: String) -> FCMErrorInfo {
        FCMErrorInfo(httpStatus: http, status: status, errorCode: code, message: message)
    }

    private func classify(_ status: Int, _ body: [UInt8], retryAfter: String? = nil) -> FCMSendResult {
        FCMResponse.classify(status: status, retryAfter: retryAfter, body: body, now: 1_700_000_000)
    }

    func testSuccessCarriesTheMessageName() {
        XCTAssertEqual(
            classify(200, Array(#"{"name":"projects/p/messages/0:123"}"#.utf8)),
            .sent(name: "projects/p/messages/0:123"))
        XCTAssertEqual(classify(200, Array("{}".utf8)), .unknown("200 without a message name"))
    }

    func testDeadTokensAreInvalid() {
        let unregistered = errorBody(404, "NOT_FOUND", "Requested entity was not found.", fcm: "UNREGISTERED")
        XCTAssertEqual(
            classify(404, unregistered),
            .invalidToken(info(404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.")))
        let badToken = errorBody(
            400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
            fcm: "INVALID_ARGUMENT")
        guard case .invalidToken = classify(400, badToken) else { return XCTFail("bad token not invalid") }
        let byField = errorBody(
            400, "INVALID_ARGUMENT", "Invalid value", fcm: "INVALID_ARGUMENT", fieldViolation: "message.token")
        guard case .invalidToken = classify(400, byField) else { return XCTFail("token field violation not invalid") }
        let notFound = errorBody(404, "NOT_FOUND", "Registration token not found")
        guard case .invalidToken = classify(404, notFound) else {
            return XCTFail("NOT_FOUND about the token not invalid")
        }
    }

    func testSenderMismatchIsInvalidForThisProject() {
        let body = errorBody(403, "PERMISSION_DENIED", "SenderId mismatch", fcm: "SENDER_ID_MISMATCH")
        XCTAssertEqual(
            classify(403, body),
            .senderMismatch(info(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch")))
    }

    func testQuotaUnavailableAndInternalAreRetriedHonouringRetryAfter() {
        let quota = errorBody(429, "RESOURCE_EXHAUSTED", "Quota exceeded", fcm: "QUOTA_EXCEEDED")
        XCTAssertEqual(
            classify(429, quota, retryAfter: "120"),
            .retry(info(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded"), retryAfter: 120))
        let unavailable = errorBody(503, "UNAVAILABLE", "The service is currently unavailable.", fcm: "UNAVAILABLE")
        XCTAssertEqual(
            classify(503, unavailable, retryAfter: "Tue, 14 Nov 2023 22:13:50 GMT"),
            .retry(info(503, "UNAVAILABLE", "UNAVAILABLE", "The service is currently unavailable."), retryAfter: 30))
        let internalError = errorBody(500, "INTERNAL", "Internal error encountered.", fcm: "INTERNAL")
        XCTAssertEqual(
            classify(500, internalError),
            .retry(info(500, "INTERNAL", "INTERNAL", "Internal error encountered."), retryAfter: nil))
        // A proxy's bare 503 without Google's body is retried too.
        XCTAssertEqual(classify(503, Array("<html>".utf8)), .retry(info(503, nil, nil, ""), retryAfter: nil))
    }

    func testAuthAnswersAreAccessTokenOrConfigurationProblems() {
        let expired = errorBody(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
        XCTAssertEqual(
            classify(401, expired),
            .accessTokenRejected(info(401, "UNAUTHENTICATED", nil, "Request had invalid authentication credentials.")))
        let thirdParty = errorBody(
            401, "UNAUTHENTICATED", "Auth error from APNS or Web Push Service", fcm: "THIRD_PARTY_AUTH_ERROR")
        guard case .authError = classify(401, thirdParty) else { return XCTFail("third-party auth error") }
        let denied = errorBody(403, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied")
        guard case .authError = classify(403, denied) else { return XCTFail("permission denied") }
    }

    func testWrongProjectIsConfigurationAndBadPayloadIsInvalidMessage() {
        let wrongProject = errorBody(404, "NOT_FOUND", "Requested entity was not found.")
        XCTAssertEqual(
            classify(404, wrongProject), .configuration(info(404, "NOT_FOUND", nil, "Requested entity was not found.")))
        let unknownName = errorBody(
            400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unknown name \"click_action\"",
            fieldViolation: "message.notification")
        guard case .invalidMessage = classify(400, unknownName) else { return XCTFail("payload error") }
        let dataType = errorBody(
            400, "INVALID_ARGUMENT", "Invalid value at 'message.data[0].value' (TYPE_STRING), 1",
            fcm: "INVALID_ARGUMENT")
        guard case .invalidMessage = classify(400, dataType) else { return XCTFail("data type error") }
    }

    func testUnexpectedAnswersAreUnknown() {
        XCTAssertEqual(classify(418, Array("teapot".utf8)), .unknown("418 without a status"))
        XCTAssertEqual(
            classify(400, errorBody(400, "FAILED_PRECONDITION", "x", fcm: "APNS_AUTH_ERROR")),
            .unknown("400 FCM error APNS_AUTH_ERROR"))
        XCTAssertEqual(classify(409, errorBody(409, "ABORTED", "x")), .unknown("409 ABORTED"))
    }

    func testHostileBodiesAreBoundedAndNeverTrap() {
        let long = String(repeating: "m", count: 10_000)
        guard case .invalidMessage(let kept) = classify(400, errorBody(400, "INVALID_ARGUMENT", long)) else {
            return XCTFail("long message")
        }
        XCTAssertEqual(kept.message.utf8.count, 512)
        let deep = Array(String(repeating: "[", count: 10_000).utf8)
        XCTAssertEqual(classify(500, deep), .retry(info(500, nil, nil, ""), retryAfter: nil))
        XCTAssertEqual(
            classify(400, Array(#"{"error":{"details":"x","status":7}}"#.utf8)),
            .invalidMessage(info(400, nil, nil, "")))
        XCTAssertEqual(
            classify(429, [], retryAfter: "99999999999999999999999"),
            .retry(info(429, nil, nil, ""), retryAfter: 86_400))
    }
}

final class RetryAfterTests: XCTestCase {
    func testDelaySecondsAndIMFFixdate() {
        XCTAssertEqual(RetryAfter.seconds("120", now: 0), 120)
        XCTAssertEqual(RetryAfter.seconds(" 0 ", now: 0), 0)
        XCTAssertEqual(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_700), 77)
        XCTAssertEqual(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: 784_111_800), 0, "a past date is now")
        XCTAssertEqual(RetryAfter.seconds("Thu, 29 Feb 2024 00:00:00 GMT", now: 1_709_164_800 - 5), 5)
        XCTAssertEqual(RetryAfter.seconds("Fri, 31 Dec 9999 23:59:59 GMT", now: 0), RetryAfter.maxSeconds)
    }

    func testRejectsOtherForms() {
        for value in [
            "", "-1", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 UTC", "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 36 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
        ] {
            XCTAssertNil(RetryAfter.seconds(value, now: 0), value)
        }
    }
}

final class FCMRetryPolicyTests: XCTestCase {
    private let policy = FCMRetryPolicy(
        maxAttempts: 5, initialDelay: 1, maxDelay: 120, quotaDelay: 60, maxTotalDelay: 600)
    private let unavailable = FCMErrorInfo(
        httpStatus: 503, status: "UNAVAILABLE", errorCode: "UNAVAILABLE", message: "")
    private let quota = FCMErrorInfo(
        httpStatus: 429, status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", message: "")

    func testBacksOffExponentiallyWithJitterAndStopsAfterMaxAttempts() {
        let result = FCMSendResult.retry(unavailable, retryAfter: nil)
        XCTAssertEqual(
            policy.decide(result, attempts: 1, elapsed: 0, random: 0.999_999_999), .retry(after: 0.9999999995))
        XCTAssertEqual(policy.decide(result, attempts: 1, elapsed: 0, random: 0), .retry(after: 0.5))
        XCTAssertEqual(policy.decide(result, attempts: 4, elapsed: 0, random: 0), .retry(after: 4))
        XCTAssertEqual(policy.decide(result, attempts: 5, elapsed: 0, random: 0), .finish)
    }

    func testHonoursRetryAfterAndTheQuotaMinimum() {
        XCTAssertEqual(
            policy.decide(.retry(unavailable, retryAfter: 30), attempts: 1, elapsed: 0, random: 0), .retry(after: 30))
        XCTAssertEqual(
            policy.decide(.retry(quota, retryAfter: nil), attempts: 1, elapsed: 0, random: 0), .retry(after: 60))
        XCTAssertEqual(
            policy.decide(.retry(quota, retryAfter: 90), attempts: 1, elapsed: 0, random: 0), .retry(after: 90))
    }

    func testRetryAfterIsHonouredExactlyEvenBelowTheQuotaMinimum() {
        // FCM said when: one second, not the minute Firebase advises when it says nothing.
        XCTAssertEqual(
            policy.decide(.retry(quota, retryAfter: 1), attempts: 1, elapsed: 0, random: 0), .retry(after: 1))
        XCTAssertEqual(
            policy.decide(.retry(unavailable, retryAfter: 2), attempts: 4, elapsed: 0, random: 0), .retry(after: 2))
        XCTAssertEqual(
            policy.decide(.retry(unavailable, retryAfter: 0), attempts: 1, elapsed: 0, random: 0), .retry(after: 0))
        let http429 = FCMErrorInfo(httpStatus: 429, status: "RESOURCE_EXHAUSTED", errorCode: nil, message: "")
        XCTAssertEqual(
            policy.decide(.retry(http429, retryAfter: nil), attempts: 1, elapsed: 0, random: 0), .retry(after: 60))
    }

    func testNoRetryIsScheduledPastTheMessageDeadline() {
        // `expiresAt` 8 s ahead, or `time_to_live` 5: a 60 s quota wait would go out after it.
        XCTAssertEqual(
            policy.decide(.retry(quota, retryAfter: nil), attempts: 1, elapsed: 0, random: 0, secondsLeft: 8), .expire)
        XCTAssertEqual(
            policy.decide(.retry(quota, retryAfter: 10), attempts: 1, elapsed: 0, random: 0, secondsLeft: 5), .expire)
        XCTAssertEqual(
            policy.decide(.retry(quota, retryAfter: 1), attempts: 1, elapsed: 0, random: 0, secondsLeft: 5),
            .retry(after: 1))
        XCTAssertEqual(
            policy.decide(.retry(unavailable, retryAfter: 0), attempts: 1, elapsed: 0, random: 0, secondsLeft: -0.5),
            .expire, "the deadline passed while the request was on the wire")
        XCTAssertEqual(
            policy.decide(.retry(unavailable, retryAfter: nil), attempts: 5, elapsed: 0, random: 0, secondsLeft: 0),
            .finish, "attempts used up: the last answer is final, not an expiry")
        XCTAssertEqual(policy.decide(.sent(name: "n"), attempts: 1, elapsed: 0, random: 0, secondsLeft: -1), .finish)
    }

    func testStopsWhenTheTotalDelayWouldBeExceeded() {
        XCTAssertEqual(
            policy.decide(.retry(unavailable, retryAfter: 100), attempts: 2, elapsed: 550, random: 0), .finish)
        XCTAssertEqual(
            policy.decide(.retry(unavailable, retryAfter: 50), attempts: 2, elapsed: 550, random: 0), .retry(after: 50))
    }

    func testNothingElseIsRetried() {
        let info = FCMErrorInfo(httpStatus: 404, status: "NOT_FOUND", errorCode: "UNREGISTERED", message: "")
        for result: FCMSendResult in [
            .sent(name: "n"), .invalidToken(info), .senderMismatch(info), .accessTokenRejected(info),
            .authError(info), .invalidMessage(info), .configuration(info), .unknown("x"),
        ] {
            XCTAssertEqual(policy.decide(result, attempts: 1, elapsed: 0, random: 0), .finish, "\(result)")
        }
    }
}
