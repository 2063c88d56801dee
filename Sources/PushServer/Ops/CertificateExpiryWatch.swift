import Foundation
import Lifecycle
import Logging
import TLSIdentity

/// Logs the APNs client certificates that expire within 30 days (or have expired): once at start and then once a
/// day, the next check's time being the only timer (no polling). Returns at once when no instance uses a
/// certificate (`isWatching` false: the application then does not run it).
final class CertificateExpiryWatch: Service {
    let name = "certificate-expiry"
    private let certificates: [(instance: String, info: CertificateInfo)]
    private let interval: Duration
    private let clock: @Sendable () -> Date
    private let logger: Logger

    init(instances: [InstanceRuntime], interval: Duration = .seconds(86_400),
         clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger) {
        certificates = instances.compactMap { instance in
            APNsCertificateHealth.certificate(instance).map { (instance.config.id, $0) }
        }
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    /// Whether any instance uses a certificate.
    var isWatching: Bool { !certificates.isEmpty }

    func run() async {
        guard !certificates.isEmpty else { return }
        while !Task.isCancelled {
            checkOnce()
            do {
                try await Task.sleep(for: interval)
            } catch {
                return
            }
        }
    }

    /// Logs every certificate that needs attention at the clock's now; returns how many did.
    @discardableResult
    func checkOnce() -> Int {
        let now = clock()
        var logged = 0
        for (instance, info) in certificates {
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
