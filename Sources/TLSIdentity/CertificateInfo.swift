import Foundation

/// What a client certificate says, read once at load time: who it names, how long it is valid, and what Apple
/// put in it (the bundle id as subject UID, the topics extension, the environment markers).
package struct CertificateInfo: Sendable, Equatable {
    /// The subject in OpenSSL's one-line form (`/UID=com.example.app/CN=Apple Push Services: …/OU=…`).
    package var subject: String
    /// The subject's `UID` (OID 0.9.2342.19200300.100.1.1): Apple's bundle id, the default topic.
    package var uid: String?
    /// The subject's `OU`: Apple puts the Team ID there.
    package var organizationalUnit: String?
    package var notBefore: Date
    package var notAfter: Date
    /// SHA-256 of the certificate's DER, lower-case hex: tells certificates apart without naming secrets.
    package var sha256Fingerprint: String
    /// The topics extension (`1.2.840.113635.100.6.3.6`), when present.
    package var topicsExtension: APNsTopicsExtension?
    /// The environments Apple's markers say the certificate is for.
    package var environments: APNsCertificateEnvironments

    package init(
        subject: String, uid: String?, organizationalUnit: String?, notBefore: Date, notAfter: Date,
        sha256Fingerprint: String, topicsExtension: APNsTopicsExtension?,
        environments: APNsCertificateEnvironments
    ) {
        self.subject = subject
        self.uid = uid
        self.organizationalUnit = organizationalUnit
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.sha256Fingerprint = sha256Fingerprint
        self.topicsExtension = topicsExtension
        self.environments = environments
    }

    /// Every topic the certificate covers: the UID first, then the extension's topics, without repeats.
    package var topics: [String] {
        var seen: Set<String> = []
        return ([uid].compactMap { $0 } + (topicsExtension?.topics ?? [])).filter { seen.insert($0).inserted }
    }

    /// Whether APNs would accept `topic` on this certificate's connections.
    package func covers(_ topic: String) -> Bool { topics.contains(topic) }

    /// Where `date` falls in the validity period.
    package enum Validity: Sendable, Equatable {
        case notYetValid
        /// Valid for this many more seconds.
        case valid(secondsLeft: Double)
        case expired
    }

    package func validity(at date: Date) -> Validity {
        if date < notBefore { return .notYetValid }
        let left = notAfter.timeIntervalSince(date)
        return left > 0 ? .valid(secondsLeft: left) : .expired
    }

    /// Whole days until `notAfter` (negative once expired), rounded down.
    package func daysLeft(at date: Date) -> Int {
        let days = (notAfter.timeIntervalSince(date) / 86_400).rounded(.down)
        // A date from an X.509 field is within years 1950…9999: far inside Int's range, but clamp anyway.
        return Int(exactly: max(-1_000_000, min(1_000_000, days))) ?? 0
    }
}
