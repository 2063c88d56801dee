import JSON

/// AWS SNS platform endpoints (`aws sns list-endpoints-by-platform-application`) as device lines. Pure. The
/// mapping and what is dropped: docs/OPERATIONS.md, "Importing from other providers".
package enum SNSEndpointConverter {
    /// A platform application's platform → push-server's platform and APNs environment.
    package static let platforms: [String: (platform: String, environment: String?)] = [
        "APNS": ("apns", "production"), "APNS_SANDBOX": ("apns", "sandbox"), "GCM": ("fcm", nil),
    ]

    package static func convert(_ endpoint: [String: JSONValue], options: ProviderImportOptions)
        -> (device: Result<JSONValue, DeviceLineParser.Refusal>, notes: [String])
    {
        let attributes = endpoint["Attributes"]?.objectValue ?? [:]
        let token = attributes["Token"]?.stringValue
        func refuse(_ reason: String) -> (Result<JSONValue, DeviceLineParser.Refusal>, [String]) {
            (.failure(.row(reason, token: token)), [])
        }
        // arn:aws:sns:REGION:ACCOUNT:endpoint/PLATFORM/APPLICATION/ID
        let arnParts = endpoint["EndpointArn"]?.stringValue?.split(separator: ":", maxSplits: 5).last?.split(
            separator: "/")
        let fromArn = arnParts.flatMap { $0.count == 4 && $0[0] == "endpoint" ? String($0[1]) : nil }
        guard let name = options.snsPlatform ?? fromArn else {
            return refuse("no platform: the EndpointArn is not arn:…:endpoint/PLATFORM/APP/ID (give --sns-platform)")
        }
        guard let (platform, environment) = platforms[name] else {
            return refuse("SNS platform \(name.prefix(32)) is not one push-server sends to")
        }
        guard let token, !token.isEmpty else { return refuse("no Attributes.Token") }
        if attributes["Enabled"]?.stringValue == "false" {
            return refuse(
                "disabled at SNS (Enabled = false: the push service reported the token invalid, or it was turned off)")
        }
        var line: [String: JSONValue] = [
            "platform": .string(platform), "token": .string(platform == "apns" ? token.lowercased() : token),
        ]
        if let environment {
            // The platform application is bound to one APNs environment: known, as if the app had declared it.
            line["environment"] = .string(environment)
            line["environmentDeclared"] = .bool(true)
        }
        if options.customUserDataIsUser, let user = attributes["CustomUserData"]?.stringValue, !user.isEmpty {
            line["userId"] = .string(user)
        }
        return (.success(.object(line)), [])
    }
}
