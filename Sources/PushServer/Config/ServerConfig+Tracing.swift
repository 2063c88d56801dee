import HTTPClient
import JSON
import Tracing

// The `tracing` section: OpenTelemetry traces over OTLP/HTTP JSON (docs/OPERATIONS.md, "Traces").
extension ServerConfig {
    static func readTracing(
        _ object: [String: JSONValue], into out: inout TracingConfiguration, _ reader: inout ConfigReader
    ) {
        let p = "tracing"
        reader.checkKeys(
            object, p,
            allowed: [
                "enabled", "endpoint", "headers", "serviceName", "resourceAttributes", "sampler", "samplerArg",
                "maxQueueSize", "maxExportBatchSize", "scheduleDelayMillis", "exportTimeoutMillis",
                "requestTimeoutSeconds",
                "caFile",
            ])
        reader.bool(object, "enabled", p, into: &out.enabled)
        if let v = reader.string(object, "endpoint", p) {
            do {
                out.endpoint = try HTTPURL(v)
            } catch {
                reader.error("\(p).endpoint", "\"\(v)\" \(error)")
            }
        }
        if let v = reader.string(object, "serviceName", p) {
            if v.isEmpty { reader.error("\(p).serviceName", "must not be empty") } else { out.serviceName = v }
        }
        if let v = reader.string(object, "caFile", p) { out.caFile = v }
        if let name = reader.string(object, "sampler", p) {
            let argument = object["samplerArg"].flatMap { $0.doubleValue.map { String($0) } }
            if let sampler = Sampler(name: name, argument: argument) {
                out.sampler = sampler
            } else {
                reader.error(
                    "\(p).sampler",
                    "must be always_on, always_off, traceidratio, parentbased_always_on, "
                        + "parentbased_always_off or parentbased_traceidratio, with samplerArg a number in 0...1")
            }
        }
        for (key, field) in [("headers", true), ("resourceAttributes", false)] {
            guard let map = reader.object(object[key], "\(p).\(key)") else { continue }
            for name in map.keys.sorted() {
                guard let value = map[name]?.stringValue else {
                    reader.error("\(p).\(key).\(name)", "must be a string")
                    continue
                }
                if field { out.headers.append((name, value)) } else { out.resourceAttributes.append((name, value)) }
            }
        }
        var batch = out.batch
        reader.int(object, "maxQueueSize", p, in: 1...1_000_000, into: &batch.maxQueueSize)
        reader.int(object, "maxExportBatchSize", p, in: 1...1_000_000, into: &batch.maxExportBatchSize)
        if let v = reader.int(object, "scheduleDelayMillis", p, in: 1...3_600_000) {
            batch.scheduleDelay = .milliseconds(v)
        }
        if let v = reader.int(object, "exportTimeoutMillis", p, in: 1...3_600_000) {
            batch.exportTimeout = .milliseconds(v)
        }
        out.batch = SpanBatcher.Settings(
            maxQueueSize: batch.maxQueueSize, maxExportBatchSize: batch.maxExportBatchSize,
            scheduleDelay: batch.scheduleDelay, exportTimeout: batch.exportTimeout)
        if let v = reader.int(object, "requestTimeoutSeconds", p, in: 1...600) { out.requestTimeout = .seconds(v) }
    }

    /// The `OTEL_*` environment variables over the file's `tracing` section (they win, as in every OpenTelemetry SDK).
    static func applyTracingEnvironment(
        _ environment: [String: String], into out: inout TracingConfiguration,
        _ reader: inout ConfigReader
    ) {
        do {
            out = try out.applying(environment: environment)
        } catch {
            reader.error("tracing (environment \(error.variable))", error.message)
        }
    }
}
