import ConfigModel
import Foundation
import JSON
import Logging
import Observability
import PublishEngine
import TLSIdentity

/// The expiry of instances' APNs client certificates, as `/ready`, `/metrics` and the log show it. APNs refuses an
/// expired certificate in the handshake and every delivery then fails, so an operator is warned
/// `ServerConfig.certificateWarningDays` (30) days ahead, and an expired certificate fails readiness (`serve` and
/// `check-config` already refuse one at start).
///
/// Every reading takes `now` from the caller: wall time, because `notAfter` is a calendar date.
enum APNsCertificateHealth {
    /// The instance's certificate; nil for `.p8` credentials or none.
    static func certificate(_ instance: InstanceRuntime) -> CertificateInfo? {
        instance.config.apns?.certificate?.identity.certificate
    }

    /// Whether the certificate can be used at `now`.
    static func usable(_ info: CertificateInfo, now: Date) -> Bool {
        if case .valid = info.validity(at: now) { return true }
        return false
    }

    /// What an operator must do, or nil while more than the warning period is left.
    static func warning(_ info: CertificateInfo, now: Date) -> String? {
        switch info.validity(at: now) {
        case .expired:
            return
                "the APNs certificate expired on \(info.notAfter.iso8601): APNs refuses it and deliveries fail; renew it"
        case .notYetValid:
            return "the APNs certificate is not valid before \(info.notBefore.iso8601)"
        case .valid:
            let days = info.daysLeft(at: now)
            guard days <= ServerConfig.certificateWarningDays else { return nil }
            return
                "the APNs certificate expires in \(days) day\(days == 1 ? "" : "s") (\(info.notAfter.iso8601)): renew it"
        }
    }

    /// What the certificate's environment markers mean for the instance (`CertificateEnvironmentFit`), or nil when
    /// it covers both environments.
    static func environmentNote(_ info: CertificateInfo, _ apns: APNsInstanceConfig) -> String? {
        CertificateEnvironmentFit(info, apns).message(endpointOverride: apns.endpointOverride != nil)
    }

    /// The instance's `apnsCertificate` object in `/ready` and the console's overview; null without a certificate.
    static func json(_ instance: InstanceRuntime, now: Date) -> JSONValue {
        guard let apns = instance.config.apns, let info = apns.certificate?.identity.certificate else { return .null }
        return .object([
            "subject": .string(info.subject),
            "topics": .array(info.topics.map { .string($0) }),
            "environments": .array(info.environments.names.map { .string($0) }),
            "environmentNote": environmentNote(info, apns).map { .string($0) } ?? .null,
            "notBefore": .string(info.notBefore.iso8601),
            "notAfter": .string(info.notAfter.iso8601),
            "daysLeft": .int(info.daysLeft(at: now)),
            "usable": .bool(usable(info, now: now)),
            "warning": warning(info, now: now).map { .string($0) } ?? .null,
        ])
    }

    /// One line for `check-config` and `serve`'s start: the environment note only for an unmarked certificate (a
    /// partial or wrong one is already a configuration warning or error).
    static func summary(_ info: CertificateInfo, _ apns: APNsInstanceConfig, now: Date) -> String {
        let fit = CertificateEnvironmentFit(info, apns)
        let note =
            fit == .unmarked
            ? fit.message(endpointOverride: apns.endpointOverride != nil).map { " (note: \($0))" } : nil
        return
            "subject \(info.subject); topics \(info.topics.isEmpty ? "(none)" : info.topics.joined(separator: ", ")); "
            + "environments \(info.environments)\(note ?? ""); notAfter \(info.notAfter.iso8601) "
            + "(\(info.daysLeft(at: now)) days left)"
    }

    static func declare(_ metrics: Metrics) {
        metrics.declare(.apnsCertificateExpiry)
    }

    /// Sets the gauge at every scrape, for the instances served then (run-time ones and reloads included: the
    /// labels are bounded by the served set).
    static func collect(
        into metrics: Metrics, instances: @escaping @Sendable () -> [InstanceRuntime],
        clock: @escaping @Sendable () -> Date
    ) {
        metrics.addCollector { metrics in
            let now = clock()
            for instance in instances() {
                guard let info = certificate(instance) else { continue }
                let id = instance.config.id
                metrics.set(
                    .apnsCertificateExpiry, ["instance": id], to: info.notAfter.timeIntervalSince(now).rounded())
            }
        }
    }
}
