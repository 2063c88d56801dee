/// One problem found in a configuration file, named by its JSON path (`instances[0].apns.keyPath`).
package struct ConfigIssue: Sendable, Equatable, CustomStringConvertible {
    /// Whether the server refuses to start (`error`) or starts and reports it (`warning`).
    package enum Severity: String, Sendable { case error, warning }

    package var path: String
    package var message: String
    package var severity: Severity

    package init(_ path: String, _ message: String, severity: Severity = .error) {
        self.path = path
        self.message = message
        self.severity = severity
    }

    package var description: String {
        severity == .error ? "\(path): \(message)" : "\(path): \(message) (warning)"
    }
}

/// Thrown when a configuration has at least one error; carries every issue, not just the first.
package struct ConfigError: Error, Sendable, CustomStringConvertible {
    package var issues: [ConfigIssue]
    /// The `${NAME}` variables the config refers to that were not set (sorted), so that a command can say where
    /// they come from (`CREDENTIALS_DIRECTORY`: systemd, for the service only).
    package var unsetVariables: [String]
    package init(issues: [ConfigIssue], unsetVariables: [String] = []) {
        self.issues = issues
        self.unsetVariables = unsetVariables
    }
    package var description: String { issues.map(\.description).joined(separator: "\n") }
}
