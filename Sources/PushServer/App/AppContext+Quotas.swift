import ConfigModel
import PushStore

/// The quotas a request can be refused by, as their `quota` metric label.
enum QuotaKind: String, Sendable, CaseIterable {
    case devices
    case publishesPerDay = "publishes_per_day"

    /// The instance's quota of this kind, nil when it has none.
    func limit(_ quotas: InstanceQuotas) -> Int? {
        switch self {
        case .devices: quotas.devices
        case .publishesPerDay: quotas.publishesPerDay
        }
    }

    /// What the instance has used of it.
    func used(_ usage: QuotaUsage) -> Int64 {
        switch self {
        case .devices: usage.devices
        case .publishesPerDay: usage.publishes
        }
    }
}

extension AppContext {
    /// Counts a refusal by `instance`'s quota. The instance label is a configured id (never one a request made
    /// up: the instance was looked up first), so the series stay bounded by the config.
    func quotaRefused(_ instance: InstanceConfig, _ quota: QuotaKind) {
        metrics.increment(.quotaRefusals, ["beams_instance": instance.id, "quota": quota.rawValue])
    }
}
