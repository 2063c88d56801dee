import Clocks
import Foundation
import Lifecycle
import Logging
import Observability
import Tracing

/// The process's trace export as a service: it idles while the server runs and, stopped after the engine and
/// the webhook outbox (whose last spans it must carry), exports what is queued within the export timeout.
struct TracingExport: Service {
    let name = "tracing"
    let pipeline: TracingPipeline

    /// Builds the pipeline when `configuration.enabled`, counting into `/metrics`; nil when tracing is off.
    /// - Throws: `CurlError` when the OTLP client cannot start.
    static func make(_ configuration: TracingConfiguration, nodeID: String, metrics: Metrics, logger: Logger) throws
        -> TracingExport?
    {
        // Declared with tracing off too, so a dashboard's trace panels name families every scrape has.
        metrics.declare(.otlpSpansExported)
        metrics.declare(.otlpSpansDropped)
        metrics.declare(.otlpExportFailures)
        metrics.declare(.otlpExportRetries)
        guard configuration.enabled else { return nil }
        let counters = OTLPExporter.Counters(
            exported: { metrics.increment(.otlpSpansExported, by: Double($0)) },
            dropped: { reason, count in metrics.increment(.otlpSpansDropped, ["reason": reason], by: Double(count)) },
            failure: { metrics.increment(.otlpExportFailures, ["reason": $0]) },
            retry: { metrics.increment(.otlpExportRetries, ["reason": $0]) })
        let resource = [Attribute("service.version", BuildInfo.version), Attribute("service.instance.id", nodeID)]
        let pipeline = try TracingPipeline(
            configuration: configuration, version: BuildInfo.version, resource: resource,
            counters: counters, logger: logger)
        logger.info(
            "Exporting traces",
            [
                "endpoint": configuration.endpoint.redacted,
                "sampler": "\(configuration.sampler)", "node": nodeID,
            ])
        return TracingExport(pipeline: pipeline)
    }

    func run() async {
        // Idle until cancelled (the group stops services by cancelling them), then flush.
        while !Task.isCancelled {
            try? await MonotonicTimer.sleep(for: .seconds(3600))
        }
        await pipeline.shutdown()
    }
}
