import Foundation
import HTTPClient

/// Where and how spans are exported: the `tracing` config section, then the standard `OTEL_*` environment
/// variables on top (docs/OPERATIONS.md, "Traces"). Off unless `enabled`.
package struct TracingConfiguration: Sendable, Equatable {
    /// The traces URL as is (`…/v1/traces`); default `http://localhost:4318/v1/traces`.
    package var endpoint: HTTPURL
    /// Extra request headers (an API key of a hosted collector), in order.
    package var headers: [(name: String, value: String)]
    package var serviceName: String
    /// `OTEL_RESOURCE_ATTRIBUTES` and the config's `resourceAttributes`; `service.name` is `serviceName`.
    package var resourceAttributes: [(key: String, value: String)]
    package var sampler: Sampler
    package var batch: SpanBatcher.Settings
    /// One HTTP attempt (`OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s).
    package var requestTimeout: Duration
    /// A CA bundle (PEM) for an https collector with a private CA.
    package var caFile: String?
    package var enabled: Bool

    package static let defaultEndpoint = "http://localhost:4318/v1/traces"

    package init(
        enabled: Bool = false, endpoint: HTTPURL? = nil, headers: [(name: String, value: String)] = [],
        serviceName: String = "push-server", resourceAttributes: [(key: String, value: String)] = [],
        sampler: Sampler = .default, batch: SpanBatcher.Settings = SpanBatcher.Settings(),
        requestTimeout: Duration = .seconds(10), caFile: String? = nil
    ) {
        self.enabled = enabled
        // The constant parses (checked by the tests); `try!` cannot fail here.
        self.endpoint = endpoint ?? (try! HTTPURL(Self.defaultEndpoint))
        self.headers = headers
        self.serviceName = serviceName
        self.resourceAttributes = resourceAttributes
        self.sampler = sampler
        self.batch = batch
        self.requestTimeout = requestTimeout
        self.caFile = caFile
    }

    package static func == (lhs: TracingConfiguration, rhs: TracingConfiguration) -> Bool {
        lhs.enabled == rhs.enabled && lhs.endpoint == rhs.endpoint && lhs.headers.elementsEqual(rhs.headers, by: ==)
            && lhs.serviceName == rhs.serviceName
            && lhs.resourceAttributes.elementsEqual(rhs.resourceAttributes, by: ==) && lhs.sampler == rhs.sampler
            && lhs.batch == rhs.batch && lhs.requestTimeout == rhs.requestTimeout && lhs.caFile == rhs.caFile
    }

    /// A variable that cannot be used; names the variable.
    package struct EnvironmentError: Error, Sendable, Equatable, CustomStringConvertible {
        package var variable: String
        package var message: String
        package var description: String { "\(variable): \(message)" }
    }

    /// This configuration with the OpenTelemetry environment variables applied (they win over the file):
    /// `OTEL_SDK_DISABLED=true` and `OTEL_TRACES_EXPORTER=none` turn tracing off, `OTEL_TRACES_EXPORTER=otlp`
    /// on; `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is used as is, `OTEL_EXPORTER_OTLP_ENDPOINT` gets `/v1/traces`
    /// appended; `…_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES` are `k=v,…` lists with percent-encoding;
    /// `OTEL_SERVICE_NAME` wins over a `service.name` in the attributes; `OTEL_TRACES_SAMPLER`/`_ARG`;
    /// `OTEL_BSP_*`; `OTEL_EXPORTER_OTLP_PROTOCOL` must be `http/json` when set.
    package func applying(environment env: [String: String]) throws(EnvironmentError) -> TracingConfiguration {
        var out = self
        func value(_ name: String) -> String? {
            guard let text = env[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            return text
        }
        if let exporter = value("OTEL_TRACES_EXPORTER") {
            switch exporter.lowercased() {
            case "otlp": out.enabled = true
            case "none": out.enabled = false
            default: throw EnvironmentError(variable: "OTEL_TRACES_EXPORTER", message: "only otlp or none is supported")
            }
        }
        for name in ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"] {
            if let protocolName = value(name), protocolName != "http/json" {
                throw EnvironmentError(variable: name, message: "only http/json is supported, not \(protocolName)")
            }
        }
        if let traces = value("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            out.endpoint = try Self.url(traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        } else if let base = value("OTEL_EXPORTER_OTLP_ENDPOINT") {
            let joined = base.hasSuffix("/") ? base + "v1/traces" : base + "/v1/traces"
            out.endpoint = try Self.url(joined, "OTEL_EXPORTER_OTLP_ENDPOINT")
        }
        for name in ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"] {
            guard let text = value(name) else { continue }
            for (key, headerValue) in try Self.pairs(text, name) {
                guard key.utf8.allSatisfy(Self.isTokenByte),
                    !headerValue.utf8.contains(where: { $0 == 13 || $0 == 10 || $0 == 0 })
                else { throw EnvironmentError(variable: name, message: "\(key) is not a valid header") }
                out.headers.removeAll { $0.name.lowercased() == key.lowercased() }
                out.headers.append((key, headerValue))
            }
        }
        if let text = value("OTEL_RESOURCE_ATTRIBUTES") {
            for (key, attribute) in try Self.pairs(text, "OTEL_RESOURCE_ATTRIBUTES") {
                // `service.name` is `serviceName`, which OTEL_SERVICE_NAME wins over.
                if key == "service.name" {
                    if value("OTEL_SERVICE_NAME") == nil { out.serviceName = attribute }
                    continue
                }
                out.resourceAttributes.removeAll { $0.key == key }
                out.resourceAttributes.append((key, attribute))
            }
        }
        if let name = value("OTEL_SERVICE_NAME") { out.serviceName = name }
        if let name = value("OTEL_TRACES_SAMPLER") {
            guard let sampler = Sampler(name: name, argument: value("OTEL_TRACES_SAMPLER_ARG")) else {
                throw EnvironmentError(
                    variable: "OTEL_TRACES_SAMPLER", message: "unknown sampler or argument out of 0...1")
            }
            out.sampler = sampler
        }
        func integer(_ name: String, _ range: ClosedRange<Int>) throws(EnvironmentError) -> Int? {
            guard let text = value(name) else { return nil }
            guard let number = Int(text), range.contains(number) else {
                throw EnvironmentError(variable: name, message: "must be an integer in \(range)")
            }
            return number
        }
        var batch = out.batch
        if let size = try integer("OTEL_BSP_MAX_QUEUE_SIZE", 1...1_000_000) { batch.maxQueueSize = size }
        if let size = try integer("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1...1_000_000) { batch.maxExportBatchSize = size }
        if let ms = try integer("OTEL_BSP_SCHEDULE_DELAY", 1...3_600_000) { batch.scheduleDelay = .milliseconds(ms) }
        if let ms = try integer("OTEL_BSP_EXPORT_TIMEOUT", 1...3_600_000) { batch.exportTimeout = .milliseconds(ms) }
        out.batch = SpanBatcher.Settings(
            maxQueueSize: batch.maxQueueSize, maxExportBatchSize: batch.maxExportBatchSize,
            scheduleDelay: batch.scheduleDelay, exportTimeout: batch.exportTimeout)
        if let ms = try integer("OTEL_EXPORTER_OTLP_TIMEOUT", 1...3_600_000) { out.requestTimeout = .milliseconds(ms) }
        if let disabled = value("OTEL_SDK_DISABLED"), disabled.lowercased() == "true" { out.enabled = false }
        return out
    }

    private static func url(_ text: String, _ variable: String) throws(EnvironmentError) -> HTTPURL {
        do {
            return try HTTPURL(text)
        } catch {
            throw EnvironmentError(variable: variable, message: "\(error)")
        }
    }

    /// `k1=v1,k2=v2` (W3C Baggage without properties): keys and values trimmed and percent-decoded; an entry
    /// without `=` or with an empty key is an error.
    static func pairs(_ text: String, _ variable: String) throws(EnvironmentError) -> [(String, String)] {
        var out: [(String, String)] = []
        for entry in text.split(separator: ",") {
            let member = entry.split(separator: ";", maxSplits: 1).first ?? ""
            guard let equals = member.firstIndex(of: "="),
                let key = member[..<equals].trimmingCharacters(in: .whitespaces).removingPercentEncoding, !key.isEmpty,
                let value = member[member.index(after: equals)...].trimmingCharacters(in: .whitespaces)
                    .removingPercentEncoding
            else { throw EnvironmentError(variable: variable, message: "expected key=value pairs separated by commas") }
            out.append((key, value))
        }
        return out
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            || Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
    }
}
