import APNsClient
import Foundation
import XCTest

/// `APNsCheckedHeaders`: the header rules worked out once for a publish's requests give each request the verdict
/// the full rules give it, and a request changed after the memo was made is checked in full.
final class APNsCheckedHeadersTests: XCTestCase {
    private let token = String(repeating: "ab", count: 32)
    private let alert = Array(#"{"aps":{"alert":"hi"}}"#.utf8)

    private func request(token: String, topic: String = "com.example.app", pushType: APNsPushType? = nil)
        -> APNsRequest
    {
        APNsRequest(deviceToken: token, payload: alert, topic: topic, pushType: pushType, collapseID: "c")
    }

    private func outcome(_ request: APNsRequest) -> Result<APNsPreparedRequest, APNsViolation> {
        do {
            return .success(try APNsHeaderRules.prepare(request))
        } catch {
            return .failure(error)
        }
    }

    /// The template's request with `token`, carrying the memo worked out from the template (token "").
    private func templated(token: String, topic: String = "com.example.app", pushType: APNsPushType? = nil)
        -> APNsRequest
    {
        let checked = APNsCheckedHeaders(request(token: "", topic: topic, pushType: pushType))
        var request = request(token: token, topic: topic, pushType: pushType)
        request.checkedHeaders = checked
        return request
    }

    func testATemplatedRequestIsPreparedAsTheFullRulesPrepareIt() throws {
        let memo = try outcome(templated(token: token, pushType: .voip)).get()
        let full = try outcome(request(token: token, pushType: .voip)).get()
        XCTAssertEqual(memo, full)
        XCTAssertEqual(memo.deviceToken, token)
        XCTAssertEqual(memo.topic, "com.example.app.voip")
    }

    func testTheDeviceTokenIsStillCheckedPerRequest() {
        XCTAssertEqual(outcome(templated(token: "xyz1")), .failure(.deviceTokenNotHex))
        XCTAssertEqual(outcome(templated(token: "abc")), .failure(.deviceTokenOddLength))
        XCTAssertEqual(outcome(templated(token: "")), .failure(.emptyDeviceToken))
    }

    func testAHeaderViolationWorkedOutOnceReachesEveryRequestAfterTheTokenCheck() {
        let topic = "com.example.app.voip"  // a VoIP topic on an alert
        XCTAssertEqual(
            outcome(templated(token: token, topic: topic, pushType: .alert)),
            outcome(request(token: token, topic: topic, pushType: .alert)))
        XCTAssertEqual(
            outcome(templated(token: token, topic: topic, pushType: .alert)),
            .failure(.topicDoesNotMatchPushType(topic: topic, pushType: .alert)))
        // The token's own violation comes first, as with the full rules.
        XCTAssertEqual(outcome(templated(token: "zz", topic: topic, pushType: .alert)), .failure(.deviceTokenNotHex))
    }

    func testARequestChangedAfterTheMemoWasMadeIsCheckedInFull() {
        var changed = templated(token: token)
        changed.topic = ""
        XCTAssertEqual(outcome(changed), .failure(.emptyTopic))
        var payload = templated(token: token)
        payload.payload = []
        XCTAssertEqual(outcome(payload), .failure(.emptyPayload))
        var pushType = templated(token: token)
        pushType.pushType = .background
        pushType.priority = .immediate
        XCTAssertEqual(outcome(pushType), .failure(.backgroundWithImmediatePriority))
    }
}
