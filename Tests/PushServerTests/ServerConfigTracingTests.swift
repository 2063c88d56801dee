import PushServer
import Tracing
import XCTest

/// The `tracing` section and the `OTEL_*` variables over it: off by default, every key read, the environment wins,
/// and a bad value is an error naming its field or variable.
final class ServerConfigTracingTests: XCTestCase {
    private let instance =
        #"{"id":"8a0c5c1e-4b1e-4f4e-9d55-2f6f8b2b7c11","secretKey":"0123456789abcdef0123456789abcdef"}"#

    private func parse(_ tracing: String, _ environment: [String: String] = [:]) throws(ConfigError) -> ServerConfig {
        try ServerConfig.parse(
            Data(#"{"tracing":\#(tracing),"instances":[\#(instance)]}"#.utf8),
            environment: environment
        ).0
    }

    private func errors(_ tracing: String, _ environment: [String: String] = [:]) -> [String] {
        configErrors { _ = try parse(tracing, environment) }
    }

    func testTracingIsOffByDefault() throws {
        let (config, _) = try ServerConfig.parse(Data(#"{"instances":[\#(instance)]}"#.utf8), environment: [:])
        XCTAssertFalse(config.tracing.enabled)
        XCTAssertEqual(config.tracing, TracingConfiguration())
    }

    func testReadsEveryKey() throws {
        let config = try parse(
            """
            {"enabled":true,"endpoint":"https://otel.example.com/v1/traces","headers":{"x-api-key":"k"},
             "serviceName":"push-eu","resourceAttributes":{"deployment.environment.name":"prod"},
             "sampler":"parentbased_traceidratio","samplerArg":0.25,"maxQueueSize":4096,"maxExportBatchSize":256,
             "scheduleDelayMillis":1000,"exportTimeoutMillis":20000,"requestTimeoutSeconds":5,"caFile":"/etc/ca.pem"}
            """)
        let tracing = config.tracing
        XCTAssertTrue(tracing.enabled)
        XCTAssertEqual(tracing.endpoint.text, "https://otel.example.com/v1/traces")
        XCTAssertEqual(tracing.headers.map { "\($0.name)=\($0.value)" }, ["x-api-key=k"])
        XCTAssertEqual(tracing.serviceName, "push-eu")
        XCTAssertEqual(tracing.resourceAttributes.map { "\($0.key)=\($0.value)" }, ["deployment.environment.name=prod"])
        XCTAssertEqual(tracing.sampler, .parentBased(root: .traceIDRatio(0.25)))
        XCTAssertEqual(
            tracing.batch,
            SpanBatcher.Settings(
                maxQueueSize: 4096, maxExportBatchSize: 256,
                scheduleDelay: .seconds(1), exportTimeout: .seconds(20)))
        XCTAssertEqual(tracing.requestTimeout, .seconds(5))
        XCTAssertEqual(tracing.caFile, "/etc/ca.pem")
    }

    func testTheEnvironmentWinsOverTheFile() throws {
        let config = try parse(
            #"{"enabled":true,"endpoint":"http://127.0.0.1:1/v1/traces","serviceName":"file"}"#,
            [
                "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_SERVICE_NAME": "env",
                "OTEL_SDK_DISABLED": "true",
            ])
        XCTAssertEqual(config.tracing.endpoint.text, "http://collector:4318/v1/traces")
        XCTAssertEqual(config.tracing.serviceName, "env")
        XCTAssertFalse(config.tracing.enabled)
    }

    func testBadValuesAreErrorsNamingTheFieldOrVariable() {
        XCTAssertEqual(errors(#"{"sampler":"sometimes"}"#).count, 1)
        XCTAssertTrue(errors(#"{"sampler":"sometimes"}"#)[0].contains("tracing.sampler"))
        XCTAssertTrue(errors(#"{"endpoint":"ftp://x"}"#)[0].contains("tracing.endpoint"))
        XCTAssertTrue(errors(#"{"maxQueueSize":0}"#)[0].contains("tracing.maxQueueSize"))
        XCTAssertTrue(
            errors("{}", ["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "7"])[0]
                .contains("OTEL_TRACES_SAMPLER"))
    }
}
