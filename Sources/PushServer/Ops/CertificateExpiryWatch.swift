import Clocks
import ConfigModel
import Foundation
import Lifecycle
import Locking
import Logging
import PublishEngine
import TLSIdentity

/// Logs each APNs client certificate once (subject, topics, environments and what they mean for the instance),
/// then the ones that expire within 30 days (or have expired): at start and then once a day, the next check's time
/// being the only timer (no polling). It reads the served instances each time, and `follow()` (called when the
/// served set changes: run-time instances, a reload) announces and checks a certificate new to it at once.
final class CertificateExpiryWatch: Service {
    let name = "certificate-expiry"
    private let instances: @Sendable () -> [InstanceRuntime]
    private let interval: Duration
    private let clock: @Sendable () -> Date
    private let logger: Logger
    /// The certificates already announced (instance and certificate), so each is announced once.
    private let announced = Locked<Set<String>>([])

    init(
        instances: @escaping @Sendable () -> [InstanceRuntime], interval: Duration = .seconds(86_400),
        clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger
    ) {
        self.instances = instances
        self.interval = interval
        self.clock = clock
        self.logger = logger
    }

    /// The served instances' certificates.
    private var certificates: [(instance: String, info: CertificateInfo, apns: APNsInstanceConfig)] {
        instances().compactMap { instance in
            guard let apns = instance.config.apns, let info = APNsCertificateHealth.certificate(instance) else {
                return nil
            }
            return (instance.config.id, info, apns)
        }
    }

    func run() async {
        announce()
        while !Task.isCancelled {
            checkOnce()
            do {
                try await MonotonicTimer.sleep(for: interval)
            } catch {
                return
            }
        }
    }

    /// The served set changed: a certificate new to the watch is announced and, when it needs attention, logged
    /// at once (the daily check covers it from then on).
    func follow() {
        let new = announce()
        if !new.isEmpty { checkOnce(only: new) }
    }

    /// One line per certificate not announced before: what it is and whether its environment markers fit the
    /// instance. - Returns: the instances announced now.
    @discardableResult
    func announce() -> Set<String> {
        let now = clock()
        var new: Set<String> = []
        for (instance, info, apns) in certificates {
            let key = [
                instance.lowercased(), info.subject, "\(info.notBefore.timeIntervalSince1970)",
                "\(info.notAfter.timeIntervalSince1970)",
            ].joined(separator: " ")
            guard announced.withLock({ $0.insert(key).inserted }) else { continue }
            new.insert(instance)
            let note = APNsCertificateHealth.environmentNote(info, apns) ?? "covers both environments"
            logger.info(
                "APNs certificate",
                [
                    "instance": instance, "subject": info.subject, "topics": info.topics.joined(separator: ","),
                    "environments": "\(info.environments)", "environmentNote": note, "notAfter": info.notAfter.iso8601,
                    "daysLeft": String(info.daysLeft(at: now)),
                ])
        }
        return new
    }

    /// Logs every certificate that needs attention at the clock's now (of the instances `only` names, when
    /// given); returns how many did.
    @discardableResult
    func checkOnce(only: Set<String>? = nil) -> Int {
        let now = clock()
        var logged = 0
        for (instance, info, _) in certificates where only?.contains(instance) ?? true {
            guard let warning = APNsCertificateHealth.warning(info, now: now) else { continue }
            let usable = APNsCertificateHealth.usable(info, now: now)
            logger.log(
                usable ? .warning : .error, usable ? "APNs certificate expires soon" : "APNs certificate unusable",
                [
                    "instance": instance, "problem": warning, "notAfter": info.notAfter.iso8601,
                    "daysLeft": String(info.daysLeft(at: now)), "subject": info.subject,
                ])
            logged += 1
        }
        return logged
    }
}
