import Foundation
import HTTPClient
import Logging

/// The running trace export of the process: `tracer` for the instrumented code, the batch processor and the OTLP
/// exporter behind it. Built once at start-up when tracing is enabled; `shutdown` exports what is queued.
package final class TracingPipeline: Sendable {
    package let tracer: Tracer
    /// The longest wait for the last exports at shutdown.
    package static let longestFlush = Duration.seconds(5)
    private let processor: BatchSpanProcessor
    private let exporter: OTLPExporter
    private let shutdownTimeout: Duration

    /// - Parameters:
    ///   - resource: attributes beyond `service.name` and the configured ones: `service.version`,
    ///     `service.instance.id` (the node), …
    ///   - dropped: told of spans dropped by a full queue (counted as `queue_full`).
    /// - Throws: `CurlError` when the HTTP client cannot start.
    package init(
        configuration: TracingConfiguration, version: String, resource: [Attribute],
        counters: OTLPExporter.Counters, logger: Logger
    ) throws(CurlError) {
        var attributes = [Attribute("service.name", configuration.serviceName)]
        attributes += resource
        for (key, value) in configuration.resourceAttributes where !attributes.contains(where: { $0.key == key }) {
            attributes.append(Attribute(key, value))
        }
        attributes += [
            Attribute("telemetry.sdk.name", "push-server"), Attribute("telemetry.sdk.language", "swift"),
            Attribute("telemetry.sdk.version", version),
        ]
        let encoder = OTLPJSONEncoder(resource: attributes, scopeName: "push-server", scopeVersion: version)
        let exporter = try OTLPExporter(
            configuration: configuration, encoder: encoder, counters: counters, logger: logger)
        self.exporter = exporter
        processor = BatchSpanProcessor(
            settings: configuration.batch,
            export: { spans, done in
                exporter.export(spans, done: done)
            }, onDrop: { counters.dropped("queue_full", $0) })
        tracer = Tracer(sampler: configuration.sampler, sink: processor)
        // Bounded well inside the server's drain (its grace period is shared by every service stopping).
        shutdownTimeout = min(configuration.batch.exportTimeout, Self.longestFlush)
    }

    /// Spans waiting for export.
    package var queued: Int { processor.queued }

    /// Exports what is queued (waiting at most the export timeout or `longestFlush`, off the cooperative pool),
    /// then stops.
    package func shutdown() async {
        let processor = processor
        let timeout = shutdownTimeout
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                processor.shutdown(timeout: timeout)
                continuation.resume()
            }
        }
        await exporter.shutdown()
    }
}
