import Foundation
import Lifecycle
import Logging
import TLSIdentity

/// Logs each APNs client certificate once at start (subject, topics, environments and what they mean for the
/// instance), then the ones that expire within 30 days (or have expired): at start and then once a day, the next
/// check's time being the only timer (no polling). Returns at once when no instance uses a
/// certificate (`isWatching` false: the application then does not run it).
final class CertificateExpiryWatch: Service {
    let name = "certificate-expiry"
    private let certificates: [(instance: String, info: CertificateInfo, apns: APNsInstanceConfig)]
    private let interval: Duration
    private let clock: @Sendable () -> Date
    private let logger: Logger

    init(instances: [InstanceRuntime], interval: Duration = .seconds(86_400),
         clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger) {
        certificates = instances.compactMap { instance in
            guard let apns = instance.config.apns, let info = APNsCertificateHealth.certificate(instance) else { return nil }
            return (instance.config.id, info, apns)
        }
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    /// Whether any instance uses a certificate.
    var isWatching: Bool { !certificates.isEmpty }

    func run() async {
        guard !certificates.isEmpty else { return }
        announce()
        while !Task.isCancelled {
            checkOnce()
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
        }
    }

    /// One line per certificate: what it is and whether its environment markers fit the instance.
    func announce() {
        let now = clock()
        for (instance, info, apns) in certificates {
            let note = APNsCertificateHealth.environmentNote(info, apns) ?? "covers both environments"
            logger.info("APNs certificate", [
                "instance": instance, "subject": info.subject, "topics": info.topics.joined(separator: ","),
                "environments": "\(info.environments)", "environmentNote": note, "notAfter": info.notAfter.iso8601,
                "daysLeft": String(info.daysLeft(at: now)),
            ])
        }
    }

    /// Logs every certificate that needs attention at the clock's now; returns how many did.
    @discardableResult
    func checkOnce() -> Int {
        let now = clock()
        var logged = 0
        for (instance, info, _) in certificates {
            guard let warning = APNsCertificateHealth.warning(info, now: now) else { continue }
            let usable = APNsCertificateHealth.usable(info, now: now)
            logger.log(usable ? .warning : .error, usable ? "APNs certificate expires soon" : "APNs certificate unusable",
                       ["instance": instance, "problem": warning, "notAfter": info.notAfter.iso8601,
                        "daysLeft": String(info.daysLeft(at: now)), "subject": info.subject])
            logged += 1
        }
        return logged
    }
}
