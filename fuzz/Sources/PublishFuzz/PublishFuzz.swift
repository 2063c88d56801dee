import BeamsModel
import Foundation
import FuzzSupport
import JSON
import PushStore

/// One libFuzzer input: the first byte picks the route (interests, users or broadcast channels) and whether the text
/// up to the first newline is the `X-Push-Delivery` header; the rest is the body. Runs what `PublishAPI.publish` and
/// `ChannelAPI.publish` run before the store: parse, delivery options, Live Activity, the plan; then the plan must
/// read back from its stored form unchanged, as the engine reads it.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPublish(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let input = FuzzInput(data, size, controlBytes: 1) else { return 0 }
    let control = input.control[0]
    var body = input.bytes
    var header: String?
    if control & 2 != 0, let newline = body.firstIndex(of: 0x0A) {
        header = String(decoding: body[..<newline], as: UTF8.self)
        body = Array(body[(newline + 1)...])
    }
    let plan: PublishPlan
    if control & 4 != 0 {
        let now = Int(fuzzIntakeTime.timeIntervalSince1970)
        guard let parsed = try? BroadcastPublishRequest.parse(body, timestamp: now, maxChannels: 100) else { return 0 }
        plan = PublishPlan(broadcast: BroadcastPlan(parsed), body: body)
    } else {
        guard let built = try? publishPlan(body, kind: control & 1 == 0 ? .interests : .users, header: header) else {
            return 0
        }
        plan = built
    }
    let stored = plan.encoded()
    guard let decoded = try? PublishPlan(decoding: stored), decoded == plan else {
        fatalError("the stored plan does not read back: \(String(decoding: stored, as: UTF8.self))")
    }
    return 0
}

/// `PublishAPI.publish` from the body to the plan, with an instance that allows a throttle and authenticates APNs
/// with a token.
func publishPlan(_ body: [UInt8], kind: PublishRequest.Audience, header: String?) throws -> PublishPlan {
    let parsed = try PublishRequest.parse(body, kind: kind)
    let limits = DeliveryOptions.Limits(maxScheduleDays: 30, defaultTimeZone: "UTC", defaultThrottlePerMinute: nil,
                                        maxThrottlePerMinute: 100_000)
    let delivery = try DeliveryOptions.resolve(member: parsed.deliveryMember, header: header, now: fuzzIntakeTime,
                                               limits: limits)
    let liveActivity = try parsed.liveActivity(delivery: delivery, now: fuzzIntakeTime)
    var plan = try PublishPlan(request: parsed, body: body, instanceID: "fuzz-instance", publishID: "pubid-fuzz",
                               delivery: delivery)
    if let liveActivity { plan.useLiveActivity(liveActivity) }
    return plan
}
