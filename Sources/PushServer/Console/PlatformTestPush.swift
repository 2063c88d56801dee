import BeamsModel
import FCMClient
import Foundation
import JSON
import PublishEngine
import PushStore
import WebPush

/// The console's test push to one registered Android (FCM), web, UnifiedPush or Huawei device: the message is
/// built by the publish's own section parsers (`fcm`, `web`, `unifiedpush`, `hms`) and sent through the instance's
/// own sender of that platform (its credentials, window, retries and, for UnifiedPush, its open-endpoint rules), so
/// what the page shows is what a publish to that device would meet. The verdict is the publish's too
/// (`DeliveryOutcome`, `HMSDispatch.verdict`): the caller records it like a publish's result, so a dead token
/// removes its device with the same invalidation record, webhook and feed entry. APNs has its own path
/// (`TestPush`), which takes any token, registered or not, and changes nothing in the store.
enum PlatformTestPush {
    /// The body sent when the page gives neither text nor a section.
    static let defaultBody = TestPush.defaultAlert
    /// The publish id written into `data.pusher` (the SDKs report opens against it; no publish has it).
    static let publishID = "console-test-push"

    /// What the notification says, before it becomes a platform's section.
    struct Content: Sendable, Equatable {
        var title: String?
        var body: String?
        /// An object: the section's `data`.
        var data: [String: JSONValue]?
        /// The platform's publish section verbatim (`{"notification":…,"data":…}` and the platform's own fields);
        /// given instead of `title`, `body` and `data`.
        var section: [String: JSONValue]?

        init(
            title: String? = nil, body: String? = nil, data: [String: JSONValue]? = nil,
            section: [String: JSONValue]? = nil
        ) {
            self.title = title
            self.body = body
            self.data = data
            self.section = section
        }

        /// The publish section these fields make: the same `{"notification":{title, body},"data":{…}}` shape every
        /// non-APNs section reads (docs/API.md).
        func publishSection() throws(BeamsError) -> [String: JSONValue] {
            if let section {
                guard title == nil, body == nil, data == nil else {
                    throw .schema(
                        "payload", "give title/body/data or payload (the platform's publish section), not both")
                }
                return section
            }
            var notification: [String: JSONValue] = ["body": .string(body ?? defaultBody)]
            if let title { notification["title"] = .string(title) }
            var section: [String: JSONValue] = ["notification": .object(notification)]
            if let data { section["data"] = .object(data) }
            return section
        }
    }

    /// A message ready for one platform's sender.
    enum Message: Sendable {
        case fcm(FCMMessageTemplate)
        case webPush(WebPushMessage)
        case hms([String: JSONValue])
    }

    /// Builds `platform`'s message from `content` with the publish's parser of that section, so the same 422s
    /// (with the section's path: `fcm.data.count`) refuse what a publish would refuse.
    /// - Returns: the message and the bytes the provider receives before encryption (the FCM `message`, the
    ///   clear-text Web Push body, Huawei's `message` without its token).
    static func message(_ content: Content, platform: Platform, instanceID: String) throws(BeamsError)
        -> (message: Message, bytes: Int)
    {
        let section = try content.publishSection()
        switch platform {
        case .fcm:
            do {
                let template = try FCMMessageTemplate(
                    section: .object(section), instanceID: instanceID,
                    publishID: publishID)
                return (.fcm(template), template.body(token: "").count)
            } catch {
                throw .schema(error.path, error.description)
            }
        case .web:
            let template = try WebTemplate.parse(section)
            let payload = try template.payload(instanceID: instanceID, publishID: publishID)
            return (.webPush(try webPushMessage(payload, ttl: template.timeToLive, section: "web")), payload.count)
        case .unifiedpush:
            let template = try UnifiedPushTemplate.parse(section)
            let payload = try template.payload(instanceID: instanceID, publishID: publishID)
            let message = try webPushMessage(
                payload, ttl: template.web.timeToLive, section: UnifiedPushTemplate.section,
                urgency: template.urgency, topic: template.topic)
            return (.webPush(message), payload.count)
        case .hms:
            let message = try HMSTemplate.parse(section, instanceID: instanceID, publishID: publishID).message
            return (.hms(message), JSONValue.object(message).serialized().count)
        case .apns:
            throw .schema("platform", "APNs test pushes take alert or payload (TestPush)")
        }
    }

    private static func webPushMessage(
        _ payload: [UInt8], ttl: Int, section: String, urgency: WebPushUrgency? = nil,
        topic: String? = nil
    ) throws(BeamsError) -> WebPushMessage {
        do {
            return try WebPushMessage(payload: payload, ttl: ttl, urgency: urgency, topic: topic)
        } catch {
            throw .schema(section, "\(error)")
        }
    }

    /// The provider's answer as the console shows it, and the verdict a publish would record.
    struct Answer: Sendable, Equatable {
        /// HTTP status of the provider's last answer (Huawei answers 200 with its result code in `reason`); nil
        /// when there was none (transport failure, no access token).
        var status: Int?
        /// FCM's error code, the push service's answer named as a publish counts it (`SubscriptionGone`), or
        /// Huawei's result code; nil when accepted.
        var reason: String?
        /// FCM's message name (`projects/…/messages/…`); the other providers return no id.
        var messageID: String?
        /// Sends it took (retries included); nil where the sender does not count them per message.
        var attempts: Int?
        /// No provider verdict: why.
        var failure: String?
        /// What a publish records for this result.
        var verdict: PlatformVerdict

        /// Whether the provider accepted it.
        var accepted: Bool {
            if case .accepted = verdict { return true }
            return false
        }

        /// Whether the verdict invalidates the device.
        var removesDevice: Bool {
            if case .failed(_, _, .badToken) = verdict { return true }
            return false
        }

        /// One line on what the reason means (nil when accepted or unknown).
        var meaning: String? {
            guard !accepted, let reason else { return nil }
            return Self.meanings[reason]
        }

        static let meanings: [String: String] = [
            "UNREGISTERED": "The app was uninstalled or the token expired: the device is removed.",
            "SENDER_ID_MISMATCH": "The token belongs to another Firebase project: the device is removed.",
            "INVALID_ARGUMENT": "FCM refused the message or the token.",
            "PERMISSION_DENIED": "The service account may not send for this project.",
            "THIRD_PARTY_AUTH_ERROR": "A credential in Firebase (the APNs key for iOS) is wrong.",
            "QUOTA_EXCEEDED": "FCM's sending quota is used up; retried, then given up.",
            "UNAVAILABLE": "FCM was unavailable; retried, then given up.",
            "SubscriptionGone": "The push service no longer knows this subscription (404/410): the device is removed.",
            "SubscriptionUnreachable": "The push service has not answered for too long: the device is removed.",
            "PayloadTooLarge": "The push service refused the message's size (413).",
            "TooManyRequests": "The push service throttled the sender (429); retried, then given up.",
            "PushServiceUnavailable": "The push service answered 5xx; retried, then given up.",
            "NoActiveSubscriber": "ntfy's 507: the phone has not polled its topic lately; the device is kept.",
            "VAPIDRejected": "The push service refused the VAPID signature (401/403).",
            "DestinationRefused": "The endpoint's address is not one the server may contact (private, loopback, …).",
            "TooManyHosts": "The instance reached its cap on distinct UnifiedPush hosts.",
            "80100000": "Huawei named this token illegal: the device is removed.",
            "80300007": "Huawei says every token of the request is invalid: the device is removed.",
            "80300008": "The message is larger than Huawei accepts.",
            "80100003": "Huawei refused the message's structure.",
            "AccessTokenRefused": "The provider refused the instance's credentials (see /ready).",
            "AccessTokenUnavailable": "No access token could be fetched (the token endpoint did not answer).",
            "TransportError": "No answer from the provider after the retries.",
        ]

        /// The console's `answer` object.
        var json: JSONValue {
            .object([
                "status": status.map(JSONValue.int) ?? .null,
                "reason": reason.map(JSONValue.string) ?? .null,
                "meaning": meaning.map(JSONValue.string) ?? .null,
                "messageId": messageID.map(JSONValue.string) ?? .null,
                "attempts": attempts.map(JSONValue.int) ?? .null,
                "failure": failure.map(JSONValue.string) ?? .null,
            ])
        }
    }

    /// The answer to an FCM send.
    static func answer(_ result: FCMResult) -> Answer {
        let verdict = DeliveryOutcome.verdict(result)
        var answer = Answer(verdict: verdict)
        switch result {
        case .response(let response, let attempts):
            answer.attempts = attempts
            if case .sent(let name) = response { answer.messageID = name }
            if case .unknown(let text) = response { answer.failure = text }
        case .failure(let failure):
            answer.failure = "\(failure)"
        }
        fill(&answer, from: verdict)
        return answer
    }

    /// The answer to a Web Push or UnifiedPush send, judged by `verdict` (the platform's table and, for a
    /// registered device, its unanswered streak).
    static func answer(_ result: WebPushResult, verdict: PlatformVerdict) -> Answer {
        var answer = Answer(verdict: verdict)
        switch result {
        case .response(_, let attempts): answer.attempts = attempts
        case .failure(let failure): answer.failure = failure.description
        }
        fill(&answer, from: verdict)
        return answer
    }

    /// The answer to a batch of one token sent to Huawei.
    static func answer(_ delivery: HMSDelivery, requests: Int) -> Answer {
        var answer = Answer(verdict: HMSDispatch.verdict(delivery))
        answer.attempts = requests
        fill(&answer, from: answer.verdict)
        return answer
    }

    private static func fill(_ answer: inout Answer, from verdict: PlatformVerdict) {
        switch verdict {
        case .unfinished:
            answer.failure = answer.failure ?? "the sender shut down before an answer"
        case .accepted(let status):
            answer.status = status
        case .failed(let reason, let status, _):
            answer.reason = reason
            answer.status = status == 0 ? nil : status
        }
    }
}
