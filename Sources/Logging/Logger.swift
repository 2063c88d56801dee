/// A cheap, copyable, thread-safe structured logger.
///
/// Messages are static strings; data goes into metadata (`logger.info("Publish accepted", ["publish": id])`).
/// Attach context once with `with(_:)` (a request id, a connection id) and pass the logger down.
package struct Logger: Sendable {
    /// A name for the component (`http`, `apns`, `store`, `engine`).
    package var label: String
    /// Records below this level are dropped before any formatting work.
    package var level: LogLevel
    /// Metadata added to every record written by this logger.
    package var metadata: [(String, String)]
    private let sink: any LogSink

    package init(label: String, level: LogLevel = .info, sink: any LogSink = StderrLogSink()) {
        self.label = label
        self.level = level
        self.metadata = []
        self.sink = sink
    }

    /// A logger with a different label and the same level, sink and metadata.
    package func named(_ label: String) -> Logger {
        var copy = self
        copy.label = label
        return copy
    }

    /// A logger that adds `extra` to every record.
    package func with(_ extra: KeyValuePairs<String, String>) -> Logger {
        var copy = self
        copy.metadata.append(contentsOf: extra.map { ($0.key, $0.value) })
        return copy
    }

    /// Whether a record at `level` would be written; guard expensive metadata with it.
    @inlinable package func isEnabled(_ level: LogLevel) -> Bool { level >= self.level }

    package func log(_ level: LogLevel, _ message: String, _ extra: KeyValuePairs<String, String> = [:]) {
        if let record = record(level, message, extra) { sink.write(record) }
    }

    /// The record `log` would write (this logger's label and metadata first), or nil below the level. With
    /// `write(_:)`, for callers that hand over many records at once (the HTTP loops' access log).
    package func record(_ level: LogLevel, _ message: String, _ extra: KeyValuePairs<String, String>) -> LogRecord? {
        guard level >= self.level else { return nil }
        var all = metadata
        all.reserveCapacity(metadata.count + extra.count)
        for (key, value) in extra { all.append((key, value)) }
        return LogRecord(level: level, label: label, message: message, metadata: all)
    }

    /// Writes records made with `record(_:_:_:)`, in order, as one batch.
    package func write(_ records: [LogRecord]) {
        sink.write(contentsOf: records)
    }

    /// The sink, when it takes pre-rendered lines (`RenderedLogSink`); nil for sinks that want records.
    package var renderedSink: (any RenderedLogSink)? { sink as? any RenderedLogSink }

    package func trace(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) { log(.trace, message, extra) }
    package func debug(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) { log(.debug, message, extra) }
    package func info(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) { log(.info, message, extra) }
    package func notice(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) {
        log(.notice, message, extra)
    }
    package func warning(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) {
        log(.warning, message, extra)
    }
    package func error(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) { log(.error, message, extra) }
    package func critical(_ message: String, _ extra: KeyValuePairs<String, String> = [:]) {
        log(.critical, message, extra)
    }

    /// A logger that writes nothing; a default for libraries whose caller passes none.
    package static let disabled = Logger(label: "disabled", level: .critical, sink: NullLogSink())
}

/// Discards everything.
package struct NullLogSink: LogSink {
    package init() {}
    package func write(_ record: LogRecord) {}
}
