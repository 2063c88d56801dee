import Foundation

/// `push-server check-config FILE`: prints OK (and warnings), or every problem and exits 2.
enum CheckConfigCommand: Command {
    static let usage = """
        Usage: push-server check-config FILE
               push-server check-config --config FILE

        Validates the configuration without starting anything: JSON syntax, every field's type and range, instance
        ids, secrets (inline, from an environment variable or a file), TLS files, each APNs .p8 key (readable,
        PEM, EC P-256, not encrypted) or client certificate (.p12 and password, or PEM pair: loads, key matches, the
        topic is in it, not expired, marked for the default environment; prints its subject, topics, environments,
        notAfter and days left), each FCM service-account file (a service_account JSON with a usable RSA key)
        and each web VAPID key (P-256 PEM) and subject (mailto: or https:, not localhost). Prints OK or every
        problem with its field path; exits 0 or 2. Warns about secrets others can read or know: secret files (and a
        configuration holding secrets inline) readable by every user or another group, two instances sharing a
        secret, the documentation's example secret; `serve` refuses to start with any of them unless it listens on
        loopback only.
        """

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config"])
        guard let path = arguments["config"] ?? arguments.positionals.first else {
            throw UsageError("a config file is required")
        }
        guard arguments.positionals.count <= (arguments["config"] == nil ? 1 : 0) else {
            throw UsageError("unexpected argument '\(arguments.positionals.last!)'")
        }
        do {
            let (config, warnings) = try ServerConfig.load(path: path, validateKey: APNsKeyCheck.problem)
            for warning in warnings { Console.out("warning: \(warning.path): \(warning.message)") }
            // Warnings here whatever the listener: `serve` refuses them on a non-loopback one (the note says so).
            let exposure = config.exposureVerdict(config.exposureIssues(configPath: path))
            for issue in exposure.errors + exposure.warnings { Console.out("warning: \(issue.path): \(issue.message)") }
            let now = Date()
            for (index, instance) in config.instances.enumerated() {
                guard let apns = instance.apns, let certificate = apns.certificate?.identity.certificate else {
                    continue
                }
                Console.out(
                    "instances[\(index)].apns.certificate: topic \(apns.topic); "
                        + APNsCertificateHealth.summary(certificate, apns, now: now))
            }
            Console.out("OK: \(path) (\(config.instances.count) instance\(config.instances.count == 1 ? "" : "s"))")
            return .ok
        } catch {
            Console.err("\(path): \(error.issues.filter { $0.severity == .error }.count) problem(s)")
            for issue in error.issues { Console.err("  \(issue)") }
            if let hint = hint(error, path: path) { Console.err(hint) }
            return .usage
        }
    }

    /// Where an unset variable comes from, when the config's errors follow from one: `CREDENTIALS_DIRECTORY` is
    /// systemd's, set only for the service, so `check-config` run by hand does not have it.
    static func hint(_ error: ConfigError, path: String) -> String? {
        guard error.unsetVariables.contains("CREDENTIALS_DIRECTORY") else { return nil }
        return """
            CREDENTIALS_DIRECTORY is set by systemd, and only for the service: it copies the files of the unit's \
            LoadCredential= lines there. Run by hand, check the config with the running service's copies, \
            `sudo env CREDENTIALS_DIRECTORY=/run/credentials/push-server.service push-server check-config \(path)`, \
            or with a directory holding the same files under the same names.
            """
    }
}
