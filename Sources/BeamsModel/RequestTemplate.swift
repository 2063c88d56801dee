import APNsClient
import Foundation

/// The parts of an APNs request every device of a publish shares.
package struct RequestTemplate: Sendable {
    let payload: [UInt8]
    let topic: String
    package let pushType: APNsPushType?
    package let priority: APNsPriority?
    package let expiration: Date?
    let collapseID: String?

    package init(plan: PublishPlan, payload: [UInt8], topic: String) {
        self.payload = payload
        self.topic = topic
        // The type is resolved once per publish and sent explicitly, so the client does not parse the payload
        // again for every device.
        let effective =
            plan.pushType.flatMap(APNsPushType.init(rawValue:)) ?? (try? APNsHeaderRules.inferPushType(payload))
        pushType = effective
        var priority = plan.priority.flatMap(APNsPriority.init(rawValue:))
        // Apple rejects priority 10 on background pushes; Beams payloads that turn out to be background (only
        // content-available) with an explicit 10 are sent with 5 rather than failing for every device; without an
        // explicit priority background goes with 5. Alerts state 10 explicitly rather than leaning on APNs' default,
        // so the request says what it means.
        if effective == .background && priority != .powerPrioritized { priority = .powerConsidered }
        if effective == .alert && priority == nil { priority = .immediate }
        self.priority = priority
        expiration = plan.expiration.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        collapseID = plan.collapseID
        checked = APNsCheckedHeaders(
            APNsRequest(
                deviceToken: "", payload: payload, topic: topic, pushType: pushType, priority: priority,
                expiration: expiration, collapseID: collapseID))
    }

    /// The header rules' verdict on the fields above, worked out once per publish: each device's request is then
    /// checked for its token only (`APNsHeaderRules.prepare`).
    let checked: APNsCheckedHeaders

    package func request(token: String) -> APNsRequest {
        var request = APNsRequest(
            deviceToken: token, payload: payload, topic: topic, pushType: pushType, priority: priority,
            expiration: expiration, collapseID: collapseID)
        request.checkedHeaders = checked
        return request
    }
}
