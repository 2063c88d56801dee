import ConfigModel
import Foundation
import JSON
import Logging
import PushStore
import TLSIdentity

// `instances[].apns.certificate`: a `.p12` with its password, or a PEM certificate and key; the password from a
// file or an environment variable, never inline.
extension ServerConfig {
    /// A certificate with this little validity left is reported (check-config, the log, `/ready`).
    static let certificateWarningDays = 30

    static let passwordKeys = SecretKeys(
        inline: "password", env: "passwordEnv", file: "passwordFile", required: false,
        minimumBytes: 1)

    /// Reads and loads the certificate; nil (with errors recorded) when it cannot be used.
    static func readAPNsCertificate(
        _ object: [String: JSONValue], _ p: String, _ reader: inout ConfigReader, environment: [String: String],
        now: Date
    ) -> APNsCertificateConfig? {
        reader.checkKeys(object, p, allowed: ["p12File", "certificateFile", "keyFile", "passwordFile", "passwordEnv"])
        let p12 = reader.string(object, "p12File", p).map { expandVariables($0, environment) }
        let certificate = reader.string(object, "certificateFile", p).map { expandVariables($0, environment) }
        let key = reader.string(object, "keyFile", p).map { expandVariables($0, environment) }
        if object["password"] != nil {
            reader.error(
                "\(p).password",
                "put the password in a file (passwordFile) or an environment variable (passwordEnv), not in the configuration"
            )
            return nil
        }
        let password = readSecret(object, p, passwordKeys, &reader, environment: environment)
        let passwordField = object["passwordEnv"] != nil ? "\(p).passwordEnv" : "\(p).passwordFile"

        let loaded: TLSClientIdentity
        switch (p12, certificate) {
        case (nil, nil):
            reader.error(p, "give p12File (a .p12 and its password) or certificateFile and keyFile (PEM)")
            return nil
        case (.some, .some):
            reader.error(p, "give either p12File or certificateFile, not both")
            return nil
        case (let p12?, nil):
            if key != nil { reader.error("\(p).keyFile", "goes with certificateFile; a .p12 holds its own key") }
            guard checkReadable(p12, "\(p).p12File", &reader) else { return nil }
            guard let password else {
                if object["passwordFile"] == nil && object["passwordEnv"] == nil {
                    reader.error("\(p).passwordFile", "passwordFile or passwordEnv is required: the .p12's password")
                }
                return nil
            }
            do throws(TLSIdentityError) {
                loaded = try TLSClientIdentity.pkcs12(file: p12, password: password)
            } catch {
                reader.error(error == .wrongPassword ? passwordField : "\(p).p12File", error.description)
                return nil
            }
        case (nil, let certificate?):
            guard let key else {
                reader.error("\(p).keyFile", "is required with certificateFile: the certificate's PEM private key")
                return nil
            }
            guard checkReadable(certificate, "\(p).certificateFile", &reader),
                checkReadable(key, "\(p).keyFile", &reader)
            else { return nil }
            if password == nil && (object["passwordFile"] != nil || object["passwordEnv"] != nil) { return nil }
            do throws(TLSIdentityError) {
                loaded = try TLSClientIdentity.pem(certificateFile: certificate, keyFile: key, password: password)
            } catch {
                switch error {
                case .notACertificate, .invalidExtensions, .invalidTopicsExtension:
                    reader.error("\(p).certificateFile", error.description)
                case .badKey("wrong password"): reader.error(passwordField, error.description)
                case .unreadableFile(let path, _) where path == certificate:
                    reader.error("\(p).certificateFile", error.description)
                default: reader.error("\(p).keyFile", error.description)
                }
                return nil
            }
        }
        let info = loaded.certificate
        switch info.validity(at: now) {
        case .expired:
            reader.error(
                p,
                "the certificate expired on \(info.notAfter.iso8601) (\(info.subject)): create a new one "
                    + "in the Apple developer account and export it; APNs refuses expired certificates")
            return nil
        case .notYetValid:
            reader.error(p, "the certificate is not valid before \(info.notBefore.iso8601) (\(info.subject))")
            return nil
        case .valid:
            let days = info.daysLeft(at: now)
            if days <= certificateWarningDays {
                reader.warning(
                    p,
                    "the certificate expires in \(days) day\(days == 1 ? "" : "s") (\(info.notAfter.iso8601)): renew it"
                )
            }
        }
        if let p12 { reader.secret("\(p).p12File", file: p12) }
        if let key { reader.secret("\(p).keyFile", file: key) }
        return APNsCertificateConfig(identity: loaded, files: [p12, certificate, key].compactMap { $0 })
    }

    /// The topic of a certificate instance: the configured one, which the certificate must cover, else its UID.
    static func certificateTopic(
        _ configured: String, _ certificate: APNsCertificateConfig, _ p: String,
        _ reader: inout ConfigReader
    ) -> String {
        let info = certificate.identity.certificate
        if configured.isEmpty {
            guard let uid = info.uid, !uid.isEmpty else {
                reader.error("\(p).topic", "is required: the certificate has no subject UID to use as the bundle id")
                return ""
            }
            return uid
        }
        if !info.covers(configured) {
            reader.error(
                "\(p).topic",
                "\(configured) is not in the certificate (it covers: "
                    + "\(info.topics.isEmpty ? "no topic" : info.topics.joined(separator: ", "))); APNs would answer BadTopic"
            )
        }
        return configured
    }

    /// Refuses a certificate not marked for the default environment and warns about one marked for it alone
    /// (`CertificateEnvironmentFit`); an unmarked one is a note that check-config and the log print, not an issue.
    static func checkCertificateEnvironments(
        _ certificate: APNsCertificateConfig, _ defaultEnvironment: PushEnvironment,
        endpointOverride: Bool, _ p: String, _ reader: inout ConfigReader
    ) {
        let fit = CertificateEnvironmentFit(
            certificate.identity.certificate.environments,
            defaultEnvironment: defaultEnvironment)
        guard let severity = fit.severity(endpointOverride: endpointOverride),
            let message = fit.message(endpointOverride: endpointOverride)
        else { return }
        if severity == .error { reader.error(p, message) } else { reader.warning(p, message) }
    }
}
