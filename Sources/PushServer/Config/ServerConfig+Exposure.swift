import Foundation

/// Where one secret of the configuration lives, recorded while it is read (`ConfigReader.secret`).
package struct SecretSource: Sendable, Equatable {
    /// The field that names it (`instances[0].secretKeyFile`, `listen.tls.privateKeyPath`).
    package var field: String
    /// The file holding it; nil when the value is inline in the configuration file.
    package var file: String?

    package init(field: String, file: String?) {
        self.field = field
        self.file = file
    }
}

// Secrets others can read or guess (docs/SECURITY.md, "Secrets"): `check-config` warns about each, and `serve`
// refuses to start with any of them on a listener that is not loopback.
extension ServerConfig {
    /// The instance secrets published with push-server (README, config.example.json, docs/API.md, bench/lib.sh): a
    /// server using one publishes to anyone who read them.
    static let exampleSecrets: Set<String> = ["example-secret-change-me-0123456789abcdef"]

    /// Whether `listen.host` is a loopback address (127.0.0.0/8, `::1`, `localhost`): only this machine reaches it.
    package var listensOnLoopbackOnly: Bool {
        let host = listen.host.lowercased()
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// Secrets that someone other than the server can read or already knows:
    /// - a secret file (instance or webhook secret, ops token, APNs `.p8` or certificate key, FCM service account,
    ///   VAPID key, TLS key, a PostgreSQL connection string with a password) readable by every user, or by a
    ///   group other than `serviceGroup` (the group the server runs as, which may need it: 0640 root:push-server);
    /// - the configuration file itself, so readable, when it holds a secret inline;
    /// - two instances with the same secret (each could publish, read statistics and sign user tokens as the other);
    /// - an example secret from the documentation.
    ///
    /// Files under `$CREDENTIALS_DIRECTORY` are systemd's copies (`LoadCredential=`): their directory admits only
    /// the service, and their mode shows the ACL mask that grants the service user access, so they are skipped.
    /// - Parameter configPath: the configuration file, for inline secrets.
    package func exposureIssues(
        configPath: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        serviceGroup: UInt32 = getegid()
    ) -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        let credentials = environment["CREDENTIALS_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
        var checked: [String: String?] = [:]
        func exposure(of file: String) -> String? {
            if let cached = checked[file] { return cached }
            var result: String?
            if let credentials, (file + "/").hasPrefix(credentials.hasSuffix("/") ? credentials : credentials + "/") {
                result = nil
            } else if let attributes = try? FileManager.default.attributesOfItem(atPath: file),
                let mode = (attributes[.posixPermissions] as? NSNumber)?.uint16Value
            {
                let group = (attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value
                let octal = "0" + String(mode & 0o777, radix: 8)
                if mode & 0o004 != 0 {
                    result = "every user of this machine can read \(file) (mode \(octal))"
                } else if mode & 0o040 != 0, let group, group != serviceGroup {
                    result = "group \(group) can read \(file) (mode \(octal))"
                }
            }
            checked[file] = result
            return result
        }

        for source in secretSources {
            if let file = source.file {
                if let problem = exposure(of: file) {
                    issues.append(
                        ConfigIssue(
                            source.field,
                            "holds a secret, but \(problem): "
                                + "`chmod 600` it (640 with the service's own group), or use systemd's LoadCredential=")
                    )
                }
            } else if let problem = exposure(of: configPath) {
                issues.append(
                    ConfigIssue(
                        source.field,
                        "is a secret inline in the configuration, and \(problem): "
                            + "move it to a file only the service reads (…File) or an environment variable (…Env), "
                            + "or `chmod 600` the configuration"))
            }
        }

        var firstWithSecret: [String: Int] = [:]
        for (index, instance) in instances.enumerated() {
            if Self.exampleSecrets.contains(instance.secretKey) {
                issues.append(
                    ConfigIssue(
                        "instances[\(index)]",
                        "uses the example secret published in the README and "
                            + "config.example.json: anyone can publish with it; generate one with `head -c 32 /dev/urandom | base64`"
                    ))
            }
            if let first = firstWithSecret[instance.secretKey] {
                issues.append(
                    ConfigIssue(
                        "instances[\(index)]",
                        "has the same secret as instances[\(first)]: either "
                            + "could publish, read and sign user tokens as the other; give each instance its own"))
            } else {
                firstWithSecret[instance.secretKey] = index
            }
        }
        return issues
    }

    /// What `serve` does with `exposureIssues`: on a loopback listener they are warnings (the README's one-command
    /// run, tests, a server behind a local proxy); on any other they are errors and it refuses to start.
    package func exposureVerdict(_ issues: [ConfigIssue]) -> (errors: [ConfigIssue], warnings: [ConfigIssue]) {
        guard !issues.isEmpty else { return ([], []) }
        if listensOnLoopbackOnly {
            return ([], issues.map { ConfigIssue($0.path, $0.message, severity: .warning) })
        }
        let note = "; refused on the non-loopback listener \(listen.host):\(listen.port)"
        return (issues.map { ConfigIssue($0.path, $0.message + note) }, [])
    }
}
