import ConfigModel
import Foundation
import JSON
import Logging
import PublishEngine
import PushStore

extension ConsoleAPI {
    /// The instance's quotas for the console's quotas panel: each limit (null: none) with what is used of it, the
    /// day's reset time, and each provider budget with this node's share and what this node sent through it in the
    /// last minute. Device and publish usage is read from the store, so it is the instance's on all nodes.
    func quotas(_ config: InstanceConfig, now: Date) async throws -> JSONValue {
        let day = UTCDay(containing: now)
        let usage = try await (app.store as? any QuotaUsageReading)?.quotaUsage(instanceID: config.id, day: day)
        let quotas = config.quotas
        let liveNodes = app.limiters.liveNodes.withLock { $0 }
        var budgets: [String: JSONValue] = [:]
        for (platform, perMinute) in quotas.notificationsPerMinute {
            budgets[platform.rawValue] = .object([
                "limit": .int(perMinute),
                "nodeShare": .int(DeliveryBudgets.share(budget: perMinute, liveNodes: liveNodes)),
                // The usage of a per-minute budget: what this node let through it in the last 60 seconds.
                "sentLastMinute": .int(
                    self.budgets?.budget(instanceID: config.id, platform: platform)?.sentLastMinute ?? 0),
            ])
        }
        return .object([
            "devices": .object([
                "limit": quotas.devices.map(JSONValue.int) ?? .null,
                "used": usage.map { .int(Int($0.devices)) } ?? .null,
            ]),
            "publishesPerDay": .object([
                "limit": quotas.publishesPerDay.map(JSONValue.int) ?? .null,
                // Counted only while the instance has the quota (the count rides in the publish's transaction).
                "used": quotas.publishesPerDay == nil ? .null : usage.map { .int(Int($0.publishes)) } ?? .null,
                "resetsAt": .string(day.next.start.iso8601),
            ]),
            "notificationsPerMinute": .object(budgets),
            "liveNodes": .int(liveNodes),
        ])
    }
}
