import ConfigModel
import PushStore
import TLSIdentity

/// Whether an instance's APNs certificate is marked for the environments the instance sends to, and what to say
/// about it (check-config, `serve`'s log, `/ready`, the console).
///
/// Where an instance sends: every device registered without an `environment` goes to `defaultEnvironment`; a
/// device registered with the other one goes there, and so does the retry of a `BadDeviceToken` for a device whose
/// environment was only defaulted (`DeliveryOutcome`). So the default environment is the one that must be covered;
/// the other one is used by some devices only. APNs answers `403 BadCertificateEnvironment` on the host of an
/// environment the certificate is not marked for (docs/APNS.md).
enum CertificateEnvironmentFit: Equatable {
    /// Marked for both environments.
    case covered
    /// Marked for the default environment only: devices of the other one fail.
    case partial(missing: PushEnvironment)
    /// Not marked for the default environment: every device registered without an environment fails.
    case mismatch(defaultEnvironment: PushEnvironment)
    /// No marker at all (self-made certificates): what APNs does with it is not known; a note, not a refusal.
    case unmarked

    init(_ environments: APNsCertificateEnvironments, defaultEnvironment: PushEnvironment) {
        if environments.isEmpty {
            self = .unmarked
        } else if !environments.contains(Self.marker(defaultEnvironment)) {
            self = .mismatch(defaultEnvironment: defaultEnvironment)
        } else if environments == .both {
            self = .covered
        } else {
            self = .partial(missing: Self.other(defaultEnvironment))
        }
    }

    init(_ certificate: CertificateInfo, _ apns: APNsInstanceConfig) {
        self.init(certificate.environments, defaultEnvironment: apns.defaultEnvironment)
    }

    static func marker(_ environment: PushEnvironment) -> APNsCertificateEnvironments {
        environment == .sandbox ? .sandbox : .production
    }

    private static func other(_ environment: PushEnvironment) -> PushEnvironment {
        environment == .sandbox ? .production : .sandbox
    }

    /// `error` refuses the configuration; `nil` is a note (or nothing to say). With `endpointOverride` the host is a
    /// stand-in whose environment is not known here, so a mismatch only warns.
    func severity(endpointOverride: Bool) -> ConfigIssue.Severity? {
        switch self {
        case .covered, .unmarked: return nil
        case .partial: return .warning
        case .mismatch: return endpointOverride ? .warning : .error
        }
    }

    /// What to tell the operator, or nil when the certificate covers both environments. The one environment a
    /// partial or mismatched certificate is marked for follows from the case.
    func message(endpointOverride: Bool) -> String? {
        let both = "an \"Apple Push Notification service SSL (Sandbox & Production)\" certificate covers both"
        switch self {
        case .covered:
            return nil
        case .unmarked:
            return "the certificate carries no environment marker (\(APNsCertificateEnvironments.sandboxOID) sandbox, "
                + "\(APNsCertificateEnvironments.productionOID) production), as self-made certificates; Apple's carry "
                + "one or both, and APNs may answer 403 BadCertificateEnvironment"
        case .partial(let missing):
            return
                "the certificate is marked for \(Self.other(missing)) only: deliveries to \(missing) (devices registered "
                + "with environment \"\(missing)\", and the retry there after BadDeviceToken) fail with 403 "
                + "BadCertificateEnvironment; \(both)"
        case .mismatch(let defaultEnvironment):
            return
                "the certificate is marked for \(Self.other(defaultEnvironment)) only, but the instance sends to \(defaultEnvironment) "
                + "(defaultEnvironment: every device registered without an environment): APNs would answer 403 "
                + "BadCertificateEnvironment there; use a certificate for \(defaultEnvironment) (\(both)) or change "
                + "defaultEnvironment"
                + (endpointOverride
                    ? " (endpointOverride is set: which environment that host plays is not known here, so it is not refused)"
                    : "")
        }
    }
}
