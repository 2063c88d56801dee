/// Severity of a log line, ordered from the chattiest to the most severe.
///
/// The names follow syslog/journald priorities so operators can filter with `journalctl -p`.
package enum LogLevel: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    case trace = 0
    case debug
    case info
    case notice
    case warning
    case error
    case critical

    /// Parses a config value such as `"info"` or `"warning"` (case-insensitive; `warn` is accepted).
    package init?(name: String) {
        switch name.lowercased() {
        case "trace": self = .trace
        case "debug": self = .debug
        case "info": self = .info
        case "notice": self = .notice
        case "warning", "warn": self = .warning
        case "error": self = .error
        case "critical": self = .critical
        default: return nil
        }
    }

    package var description: String {
        switch self {
        case .trace: return "trace"
        case .debug: return "debug"
        case .info: return "info"
        case .notice: return "notice"
        case .warning: return "warning"
        case .error: return "error"
        case .critical: return "critical"
        }
    }

    /// The sd-daemon(3) priority prefix (`<6>` for info), which journald reads from a stream's line start.
    package var syslogPriority: Int {
        switch self {
        case .trace, .debug: return 7
        case .info: return 6
        case .notice: return 5
        case .warning: return 4
        case .error: return 3
        case .critical: return 2
        }
    }

    package static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }
}
