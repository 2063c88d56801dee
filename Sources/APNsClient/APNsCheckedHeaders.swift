import Foundation

/// The header rules' verdict on everything in a request but its device token (topic, push type, priority,
/// expiration, collapse id, apns-id, payload), worked out once for the many requests that share those fields: a
/// publish's requests differ only in their tokens (`RequestTemplate`). `APNsHeaderRules.prepare` then checks just
/// the token of a request that carries it, instead of resolving the topic (a string built per request), scanning
/// the topic and collapse id for control characters and checking the payload's size per notification.
///
/// The verdict applies only to a request whose shared fields are still the ones it was worked out for
/// (`applies(to:)`): a request changed after the template built it is checked in full, so the rules' outcome never
/// depends on the memo. The comparison is cheap for a template's requests, whose strings and payload share their
/// storage with the memo's (equality looks at the storage first).
///
/// A class, not a struct: every request of the publish carries it, and a struct of a dozen references would be
/// copied (retained and released) into each one; a class is one reference.
package final class APNsCheckedHeaders: Sendable {
    private let topic: String
    private let pushType: APNsPushType?
    private let priority: APNsPriority?
    private let expiration: Date?
    private let collapseID: String?
    private let apnsID: String?
    private let payload: [UInt8]
    /// The prepared request (its device token the one `request` had), or the first rule it breaks.
    let verdict: Result<APNsPreparedRequest, APNsViolation>

    /// Checks `request`'s header fields (not its device token) once.
    package init(_ request: APNsRequest) {
        topic = request.topic
        pushType = request.pushType
        priority = request.priority
        expiration = request.expiration
        collapseID = request.collapseID
        apnsID = request.apnsID
        payload = request.payload
        do {
            verdict = .success(try APNsHeaderRules.prepareHeaders(request))
        } catch {
            verdict = .failure(error)
        }
    }

    /// Whether `request`'s header fields are the ones this verdict was worked out for.
    func applies(to request: APNsRequest) -> Bool {
        topic == request.topic && pushType == request.pushType && priority == request.priority
            && expiration == request.expiration && collapseID == request.collapseID && apnsID == request.apnsID
            && payload == request.payload
    }
}
