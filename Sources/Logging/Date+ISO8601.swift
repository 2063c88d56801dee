import Foundation

extension Date {
    /// RFC 3339 UTC with milliseconds, as the log lines' `ts=` (`LogFormat.timestamp`): the form of every date the
    /// server writes into an API answer, a webhook or a stored event.
    package var iso8601: String { LogFormat.timestamp(self) }
}
