import ConfigModel
import JSON
import PushStore

extension InstanceConfig {
    /// The devices the instance may hold: the lower of the server's `limits.maxDevicesPerInstance` and its own
    /// `quotas.devices` (registrations and imports alike).
    func deviceCap(_ limits: ServerConfig.Limits) -> Int {
        min(limits.maxDevicesPerInstance, quotas.devices ?? .max)
    }
}

extension ServerConfig {
    /// `instances[].quotas`: `devices`, `publishesPerDay` and `notificationsPerMinute` (an object by platform).
    static func readQuotas(_ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader) -> InstanceQuotas {
        reader.checkKeys(object, p, allowed: ["devices", "publishesPerDay", "notificationsPerMinute"])
        var quotas = InstanceQuotas()
        quotas.devices = reader.int(object, "devices", p, in: 1...1_000_000_000)
        quotas.publishesPerDay = reader.int(object, "publishesPerDay", p, in: 1...1_000_000_000)
        if let budgets = reader.object(object["notificationsPerMinute"], "\(p).notificationsPerMinute") {
            let q = "\(p).notificationsPerMinute"
            reader.checkKeys(budgets, q, allowed: Set(Platform.allCases.map(\.rawValue)))
            for platform in Platform.allCases {
                if let v = reader.int(budgets, platform.rawValue, q, in: 1...100_000_000) {
                    quotas.notificationsPerMinute[platform] = v
                }
            }
        }
        return quotas
    }
}
