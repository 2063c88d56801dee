import HTTPClient
import Tracing
import XCTest

final class TracingConfigurationTests: XCTestCase {
    func testDefaultsAreOffWithTheStandardEndpointAndSampler() throws {
        let configuration = TracingConfiguration()
        XCTAssertFalse(configuration.enabled)
        XCTAssertEqual(configuration.endpoint.text, "http://localhost:4318/v1/traces")
        XCTAssertEqual(configuration.sampler, .parentBased(root: .alwaysOn))
        XCTAssertEqual(configuration.serviceName, "push-server")
        XCTAssertEqual(try configuration.applying(environment: [:]), configuration)
    }

    func testBaseEndpointGetsTheTracesPathAndTheTracesEndpointIsUsedAsIs() throws {
        let base = try TracingConfiguration().applying(environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9/otel/"
        ])
        XCTAssertEqual(base.endpoint.text, "http://127.0.0.1:9/otel/v1/traces")
        let traces = try TracingConfiguration().applying(environment: [
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:8/t",
        ])
        XCTAssertEqual(traces.endpoint.text, "http://127.0.0.1:8/t")
    }

    func testHeadersResourceAttributesServiceNameAndSamplerAreRead() throws {
        let configuration = try TracingConfiguration().applying(environment: [
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%3Dcret, x-team=push",
            "OTEL_RESOURCE_ATTRIBUTES": "service.name=ignored,deployment.environment=prod%2Ceu",
            "OTEL_SERVICE_NAME": "beams",
            "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1",
            "OTEL_BSP_MAX_QUEUE_SIZE": "100", "OTEL_BSP_SCHEDULE_DELAY": "250",
        ])
        XCTAssertTrue(configuration.enabled)
        XCTAssertEqual(configuration.headers.map { "\($0.name)=\($0.value)" }, ["api-key=s=cret", "x-team=push"])
        XCTAssertEqual(
            configuration.resourceAttributes.map { "\($0.key)=\($0.value)" }, ["deployment.environment=prod,eu"])
        XCTAssertEqual(configuration.serviceName, "beams")
        XCTAssertEqual(configuration.sampler, .parentBased(root: .traceIDRatio(0.1)))
        XCTAssertEqual(configuration.batch.maxQueueSize, 100)
        XCTAssertEqual(configuration.batch.maxExportBatchSize, 100)
        XCTAssertEqual(configuration.batch.scheduleDelay, .milliseconds(250))
    }

    func testSDKDisabledWinsAndBadValuesNameTheirVariable() throws {
        var on = TracingConfiguration()
        on.enabled = true
        XCTAssertFalse(
            try on.applying(environment: ["OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"]).enabled)
        XCTAssertThrowsError(try on.applying(environment: ["OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"])) {
            XCTAssertEqual(($0 as? TracingConfiguration.EnvironmentError)?.variable, "OTEL_EXPORTER_OTLP_PROTOCOL")
        }
        XCTAssertThrowsError(
            try on.applying(environment: ["OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"]))
        XCTAssertThrowsError(try on.applying(environment: ["OTEL_EXPORTER_OTLP_HEADERS": "novalue"]))
        XCTAssertThrowsError(try on.applying(environment: ["OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://x"]))
    }
}
