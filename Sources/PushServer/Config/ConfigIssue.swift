/// One problem found in a configuration file, named by its JSON path (`instances[0].apns.keyPath`).
public struct ConfigIssue: Sendable, Equatable, CustomStringConvertible {
    /// Whether the server refuses to start (`error`) or starts and reports it (`warning`).
    public enum Severity: String, Sendable { case error, warning }

    public var path: String
    public var message: String
    public var severity: Severity

    public init(_ path: String, _ message: String, severity: Severity = .error) {
        self.path = path
        self.message = message
        self.severity = severity
    }

    public var description: String {
        severity == .error ? "\(path): \(message)" : "\(path): \(message) (warning)"
    }
}

/// Thrown when a configuration has at least one error; carries every issue, not just the first.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public var issues: [ConfigIssue]
    /// The `${NAME}` variables the config refers to that were not set (sorted), so that a command can say where
    /// they come from (`CREDENTIALS_DIRECTORY`: systemd, for the service only).
    public var unsetVariables: [String]
    public init(issues: [ConfigIssue], unsetVariables: [String] = []) {
        self.issues = issues
        self.unsetVariables = unsetVariables
    }
    public var description: String { issues.map(\.description).joined(separator: "\n") }
}
