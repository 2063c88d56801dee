import ConfigModel
import Foundation
import JSON
import PushStore

// `instances[].apns.broadcast`: broadcast channel hosts, environment and the per-publish channel bound.
extension ServerConfig {
    static func readBroadcast(_ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader)
        -> APNsBroadcastConfig
    {
        reader.checkKeys(object, p, allowed: ["environment", "managementUrl", "sendUrl", "maxChannelsPerPublish"])
        var broadcast = APNsBroadcastConfig()
        if let name = reader.string(object, "environment", p) {
            if let value = PushEnvironment(rawValue: name.lowercased()) {
                broadcast.environment = value
            } else {
                reader.error("\(p).environment", "must be \"sandbox\" or \"production\", got \"\(name)\"")
            }
        }
        for key in ["managementUrl", "sendUrl"] {
            guard let url = reader.string(object, key, p) else { continue }
            guard URL(string: url)?.scheme == "https", URL(string: url)?.host?.isEmpty == false else {
                reader.error("\(p).\(key)", "must be an https URL such as https://api-broadcast.push.apple.com")
                continue
            }
            if key == "managementUrl" { broadcast.managementURL = url } else { broadcast.sendURL = url }
        }
        reader.int(
            object, "maxChannelsPerPublish", p, in: 1...APNsBroadcastConfig.maxChannelsPerPublishLimit,
            into: &broadcast.maxChannelsPerPublish)
        return broadcast
    }
}
