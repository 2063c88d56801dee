import JSON
import PushStore

/// One row of another provider's export, converted to a device line (docs/DATA-FORMAT.md) or refused by the
/// converter, with its line (CSV: the line the record starts on) in the provider's file.
package struct ProviderRow: Equatable {
    package var line: Int
    package var device: Result<JSONValue, DeviceLineParser.Refusal>
    /// What the converter left out of an imported row and why (a channel that is not an interest name, a time
    /// zone given only as an offset), counted per kind in the command's summary.
    package var notes: [String] = []
}

/// A stream of converted rows, read as the import goes (one row in memory at a time).
package protocol ProviderRows {
    /// The next row, nil at the end. - Throws: the reader's error, or `ProviderFileError` for a file the
    ///   converter cannot read on (the import stops there, batches before it committed).
    mutating func next() throws -> ProviderRow?
}

/// The provider's file cannot be read any further (not CSV, not JSON, a missing header).
package struct ProviderFileError: Error, Equatable, CustomStringConvertible {
    package var description: String
}

/// The providers `push-server import --from` reads.
package enum Provider: String, CaseIterable {
    case parse, onesignal, sns
}

/// What the converters need besides the rows: `--map` rules and the SNS platform. Parsed from the command line.
package struct ProviderImportOptions: Equatable {
    /// OneSignal: a tag's key and the interest it gives (`{value}` is replaced by the tag's value).
    package var tagInterests: [(key: String, template: String)] = []
    /// SNS: `CustomUserData` is the device's user id.
    package var customUserDataIsUser = false
    /// SNS: the platform application's platform (`APNS`, `APNS_SANDBOX`, `GCM`), else read from each `EndpointArn`.
    package var snsPlatform: String?

    package init(
        tagInterests: [(key: String, template: String)] = [], customUserDataIsUser: Bool = false,
        snsPlatform: String? = nil
    ) {
        self.tagInterests = tagInterests
        self.customUserDataIsUser = customUserDataIsUser
        self.snsPlatform = snsPlatform
    }

    package static func == (a: Self, b: Self) -> Bool {
        a.tagInterests.map { [$0.key, $0.template] } == b.tagInterests.map { [$0.key, $0.template] }
            && a.customUserDataIsUser == b.customUserDataIsUser && a.snsPlatform == b.snsPlatform
    }

    /// Reads `--map` rules, separated by spaces: `tag:KEY=TEMPLATE` (OneSignal tag → interest; `{value}` in the
    /// template is the tag's value, a template without it names one interest for every device with the tag set
    /// to anything but "", "0" or "false") and `CustomUserData=user` (SNS).
    package static func parse(map: String?, snsPlatform: String?, for provider: Provider) throws(UsageError) -> Self {
        var options = Self()
        for rule in (map ?? "").split(separator: " ", omittingEmptySubsequences: true) {
            if rule.hasPrefix("tag:"), let equals = rule.firstIndex(of: "=") {
                guard provider == .onesignal else { throw UsageError("--map tag:… is for --from onesignal") }
                let key = String(rule[rule.index(rule.startIndex, offsetBy: 4)..<equals])
                let template = String(rule[rule.index(after: equals)...])
                guard !key.isEmpty, !template.isEmpty else {
                    throw UsageError("--map tag:KEY=INTEREST, both non-empty")
                }
                options.tagInterests.append((key, template))
            } else if rule == "CustomUserData=user" {
                guard provider == .sns else { throw UsageError("--map CustomUserData=user is for --from sns") }
                options.customUserDataIsUser = true
            } else {
                throw UsageError("--map \(rule): expected tag:KEY=INTEREST (onesignal) or CustomUserData=user (sns)")
            }
        }
        if let snsPlatform {
            guard provider == .sns else { throw UsageError("--sns-platform is for --from sns") }
            guard SNSEndpointConverter.platforms[snsPlatform] != nil else {
                throw UsageError("--sns-platform must be APNS, APNS_SANDBOX or GCM")
            }
            options.snsPlatform = snsPlatform
        }
        return options
    }
}

extension DeviceLineParser.Refusal {
    /// A converter's refusal of a row whose token is known (masked like every refusal).
    package static func row(_ reason: String, token: String?) -> Self {
        Self(reason: reason, maskedToken: token.map { DeviceInvalidation.mask(token: $0) })
    }
}
