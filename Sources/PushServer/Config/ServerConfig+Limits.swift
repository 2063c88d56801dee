import Foundation
import HTTPClient
import JSON
import Logging
import PushStore

// The `limits` and `webhooks` sections.
extension ServerConfig {
    static func readLimits(_ limits: [String: JSONValue], into out: inout Limits, _ reader: inout ConfigReader) {
        let p = "limits"
        reader.checkKeys(
            limits, p,
            allowed: [
                "maxRequestLineBytes", "maxHeaderBytes", "maxBodyBytes", "maxConnections", "headerTimeoutSeconds",
                "bodyTimeoutSeconds", "idleTimeoutSeconds", "writeTimeoutSeconds", "requestsPerSecondPerInstance",
                "maxDevicesPerUser", "ipRequestsPerSecond", "ipBurst", "ipInterestsPerSecond",
                "deviceRequestsPerSecondPerInstance",
                "reportsPerSecondPerInstance", "maxDevicesPerInstance", "maxTrackedClients", "authFailuresPerIP",
                "authFailureWindowSeconds", "authLockoutSeconds", "trustedProxies",
                "maxLiveActivityStartTokensPerDevice", "maxLiveActivitiesPerDevice", "maxConnectionsPerAddress",
                "maxBodyBytesInFlight", "idleTimeoutUnderPressureSeconds", "maxSubscriptionsPerInstance",
                "maxInterestsPerInstance",
            ])
        reader.int(limits, "maxRequestLineBytes", p, in: 256...1_048_576, into: &out.maxRequestLineBytes)
        reader.int(limits, "maxHeaderBytes", p, in: 1024...1_048_576, into: &out.maxHeaderBytes)
        reader.int(limits, "maxBodyBytes", p, in: 1024...(64 << 20), into: &out.maxBodyBytes)
        reader.int(limits, "maxConnections", p, in: 1...1_000_000, into: &out.maxConnections)
        reader.int(limits, "maxConnectionsPerAddress", p, in: 0...1_000_000, into: &out.maxConnectionsPerAddress)
        reader.int(limits, "maxBodyBytesInFlight", p, in: (1 << 20)...(16 << 30), into: &out.maxBodyBytesInFlight)
        reader.int(
            limits, "idleTimeoutUnderPressureSeconds", p, in: 1...86400, into: &out.idleTimeoutUnderPressureSeconds)
        reader.int(limits, "headerTimeoutSeconds", p, in: 1...3600, into: &out.headerTimeoutSeconds)
        reader.int(limits, "bodyTimeoutSeconds", p, in: 1...3600, into: &out.bodyTimeoutSeconds)
        reader.int(limits, "idleTimeoutSeconds", p, in: 1...86400, into: &out.idleTimeoutSeconds)
        reader.int(limits, "writeTimeoutSeconds", p, in: 1...3600, into: &out.writeTimeoutSeconds)
        if out.maxBodyBytesInFlight < out.maxBodyBytes {
            reader.error(
                "\(p).maxBodyBytesInFlight",
                "must be at least maxBodyBytes (\(out.maxBodyBytes)), or no request of that size could pass")
        }
        reader.int(
            limits, "requestsPerSecondPerInstance", p, in: 1...1_000_000, into: &out.requestsPerSecondPerInstance)
        reader.int(limits, "maxDevicesPerUser", p, in: 1...100_000, into: &out.maxDevicesPerUser)
        reader.int(limits, "ipRequestsPerSecond", p, in: 0...1_000_000, into: &out.ipRequestsPerSecond)
        reader.int(limits, "ipBurst", p, in: 1...10_000_000, into: &out.ipBurst)
        reader.int(limits, "ipInterestsPerSecond", p, in: 0...1_000_000, into: &out.ipInterestsPerSecond)
        reader.int(
            limits, "deviceRequestsPerSecondPerInstance", p, in: 0...1_000_000,
            into: &out.deviceRequestsPerSecondPerInstance)
        reader.int(limits, "reportsPerSecondPerInstance", p, in: 0...1_000_000, into: &out.reportsPerSecondPerInstance)
        reader.int(limits, "maxDevicesPerInstance", p, in: 1...1_000_000_000, into: &out.maxDevicesPerInstance)
        reader.int(
            limits, "maxSubscriptionsPerInstance", p, in: 1...1_000_000_000, into: &out.maxSubscriptionsPerInstance)
        reader.int(limits, "maxInterestsPerInstance", p, in: 1...1_000_000_000, into: &out.maxInterestsPerInstance)
        reader.int(limits, "maxTrackedClients", p, in: 1000...10_000_000, into: &out.maxTrackedClients)
        reader.int(limits, "authFailuresPerIP", p, in: 0...1_000_000, into: &out.authFailuresPerIP)
        reader.int(limits, "authFailureWindowSeconds", p, in: 1...86_400, into: &out.authFailureWindowSeconds)
        reader.int(limits, "authLockoutSeconds", p, in: 1...86_400, into: &out.authLockoutSeconds)
        reader.int(
            limits, "maxLiveActivityStartTokensPerDevice", p, in: 1...1000,
            into: &out.maxLiveActivityStartTokensPerDevice)
        reader.int(limits, "maxLiveActivitiesPerDevice", p, in: 1...1000, into: &out.maxLiveActivitiesPerDevice)
        if let value = limits["trustedProxies"], !value.isNull {
            if let list = value.arrayValue {
                var proxies: [String] = []
                for (index, element) in list.enumerated() {
                    if let text = element.stringValue, let address = ClientAddress.canonical(text) {
                        proxies.append(address)
                    } else {
                        reader.error(
                            "\(p).trustedProxies[\(index)]", "must be an IPv4 or IPv6 address, got \(element.jsonText)")
                    }
                }
                out.trustedProxies = proxies
            } else {
                reader.error("\(p).trustedProxies", "must be an array of IP addresses, got \(value.typeName)")
            }
        }
    }

    static func readWebhooks(_ object: [String: JSONValue], into out: inout Webhooks, _ reader: inout ConfigReader) {
        let p = "webhooks"
        reader.checkKeys(
            object, p,
            allowed: [
                "allowedDestinations", "timeoutSeconds", "connectTimeoutSeconds",
                "maxResponseBytes", "concurrency", "maxConcurrentPerDestination",
                "circuitBreakerTimeouts", "circuitBreakerSeconds",
            ])
        reader.int(object, "concurrency", p, in: 1...1024, into: &out.concurrency)
        reader.int(object, "maxConcurrentPerDestination", p, in: 1...1024, into: &out.maxConcurrentPerDestination)
        reader.int(object, "circuitBreakerTimeouts", p, in: 1...100, into: &out.circuitBreakerTimeouts)
        reader.int(object, "circuitBreakerSeconds", p, in: 1...3600, into: &out.circuitBreakerSeconds)
        reader.int(object, "timeoutSeconds", p, in: 1...60, into: &out.timeoutSeconds)
        reader.int(object, "connectTimeoutSeconds", p, in: 1...60, into: &out.connectTimeoutSeconds)
        reader.int(object, "maxResponseBytes", p, in: 1024...(16 << 20), into: &out.maxResponseBytes)
        if out.connectTimeoutSeconds > out.timeoutSeconds {
            reader.error("\(p).connectTimeoutSeconds", "must not exceed timeoutSeconds (\(out.timeoutSeconds))")
        }
        guard let value = object["allowedDestinations"], !value.isNull else { return }
        guard let list = value.arrayValue else {
            reader.error("\(p).allowedDestinations", "must be an array of strings, got \(value.typeName)")
            return
        }
        for (index, element) in list.enumerated() {
            let field = "\(p).allowedDestinations[\(index)]"
            guard let text = element.stringValue else {
                reader.error(field, "must be a string, got \(element.typeName)")
                continue
            }
            do {
                out.allowedDestinations.append(try DestinationPolicy.Allowance(parsing: text))
            } catch {
                reader.error(field, "\"\(text)\" \(error)")
            }
        }
    }
}
