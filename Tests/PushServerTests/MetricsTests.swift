@testable import PushServer
import APNsClient
import XCTest

final class MetricsTests: XCTestCase {
    func testRendersCountersGaugesAndCumulativeHistograms() {
        let metrics = Metrics()
        metrics.declare("http_requests_total", counter: "Requests.")
        metrics.declare("queue_depth", gauge: "Jobs waiting.")
        metrics.declare("latency_seconds", histogram: "Latency.", buckets: [0.1, 1])
        metrics.increment("http_requests_total", ["route": "/a", "status": "200"])
        metrics.increment("http_requests_total", ["route": "/a", "status": "200"], by: 2)
        metrics.set("queue_depth", to: 7)
        metrics.observe("latency_seconds", ["route": "/a"], 0.05)
        metrics.observe("latency_seconds", ["route": "/a"], 0.5)
        metrics.observe("latency_seconds", ["route": "/a"], 5)
        let text = metrics.render()
        XCTAssertTrue(text.contains("# TYPE http_requests_total counter\nhttp_requests_total{route=\"/a\",status=\"200\"} 3\n"))
        XCTAssertTrue(text.contains("queue_depth 7\n"))
        XCTAssertTrue(text.contains("latency_seconds_bucket{route=\"/a\",le=\"0.1\"} 1\n"))
        XCTAssertTrue(text.contains("latency_seconds_bucket{route=\"/a\",le=\"1\"} 2\n"))
        XCTAssertTrue(text.contains("latency_seconds_bucket{route=\"/a\",le=\"+Inf\"} 3\n"))
        XCTAssertTrue(text.contains("latency_seconds_count{route=\"/a\"} 3\n"))
        XCTAssertTrue(text.contains("latency_seconds_sum{route=\"/a\"} 5.55\n"))
    }

    func testEscapesLabelValues() {
        XCTAssertEqual(Metrics.labelString(["r": "a\"b\\c\nd"]), #"r="a\"b\\c\nd""#)
    }

    func testCollectorsRunBeforeRender() {
        let metrics = Metrics()
        metrics.declare("g", gauge: "G.")
        metrics.addCollector { $0.set("g", to: 42) }
        XCTAssertTrue(metrics.render().contains("g 42\n"))
    }

    // MARK: Bounds

    func testSeriesPastTheCapGoToOneOverflowSeries() {
        let metrics = Metrics(maxSeriesPerFamily: 3)
        metrics.declare("c", counter: "C.")
        for i in 0..<100 { metrics.increment("c", ["route": "/r\(i)", "status": "200"]) }
        XCTAssertEqual(metrics.seriesCount("c"), 4)  // three admitted, one overflow
        XCTAssertEqual(metrics.value("c", ["route": "/r0", "status": "200"]), 1)
        XCTAssertEqual(metrics.value("c", ["route": "other", "status": "other"]), 97)
        // A series admitted before the cap keeps counting in place.
        metrics.increment("c", ["route": "/r2", "status": "200"])
        XCTAssertEqual(metrics.value("c", ["route": "/r2", "status": "200"]), 2)
    }

    func testHistogramAndGaugeSeriesAreCappedToo() {
        let metrics = Metrics(maxSeriesPerFamily: 2)
        metrics.declare("h", histogram: "H.", buckets: [1])
        metrics.declare("g", gauge: "G.")
        for i in 0..<50 {
            metrics.observe("h", ["route": "/r\(i)"], 0.5)
            metrics.set("g", ["k": "\(i)"], to: Double(i))
        }
        XCTAssertEqual(metrics.seriesCount("h"), 3)
        XCTAssertEqual(metrics.seriesCount("g"), 3)
        XCTAssertTrue(metrics.render().contains("h_count{route=\"other\"} 48\n"))
        XCTAssertEqual(metrics.value("g", ["k": "other"]), 49)
    }

    func testUndeclaredFamiliesAreIgnored() {
        let metrics = Metrics()
        metrics.increment("nope", ["a": "b"])
        metrics.observe("nope", [:], 1)
        XCTAssertEqual(metrics.render(), "")
    }

    func testRenderWhileOtherThreadsCountSeesConsistentFamilies() {
        let metrics = Metrics()
        metrics.declare("c", counter: "C.")
        metrics.declare("h", histogram: "H.")
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for i in 0..<2000 {
                if worker == 0 && i % 100 == 0 { _ = metrics.render() }
                metrics.increment("c", ["route": "/r\(i % 10)"])
                metrics.observe("h", ["route": "/r\(i % 10)"], 0.001)
            }
        }
        XCTAssertEqual((0..<10).map { metrics.value("c", ["route": "/r\($0)"]) }.reduce(0, +), 16_000)
        XCTAssertTrue(metrics.render().contains("h_count{route=\"/r3\"} 1600\n"))
    }

    func testFormatsNaNAsPrometheusSpellsIt() {
        XCTAssertEqual(Metrics.format(.nan), "NaN")
        XCTAssertEqual(Metrics.format(-.infinity), "-Inf")
        XCTAssertEqual(Metrics.format(1e20), "1e+20")
    }

    func testMethodLabelIsAKnownMethodOrOther() {
        XCTAssertEqual(MetricLabel.method("GET"), "GET")
        XCTAssertEqual(MetricLabel.method("DELETE"), "DELETE")
        XCTAssertEqual(MetricLabel.method("-"), "-")
        XCTAssertEqual(MetricLabel.method("get"), "other")
        XCTAssertEqual(MetricLabel.method("PROPFIND"), "other")
        XCTAssertEqual(MetricLabel.method(String(repeating: "X", count: 2000)), "other")
    }

    func testStatusLabelIsAKnownStatusItsClassOrOther() {
        XCTAssertEqual(MetricLabel.status(200), "200")
        XCTAssertEqual(MetricLabel.status(0), "0")
        XCTAssertEqual(MetricLabel.status(410), "410")
        XCTAssertEqual(MetricLabel.status(418), "4xx")
        XCTAssertEqual(MetricLabel.status(599), "5xx")
        XCTAssertEqual(MetricLabel.status(600), "other")
        XCTAssertEqual(MetricLabel.status(-1), "other")
        XCTAssertEqual(MetricLabel.status(.max), "other")
    }

    func testReasonLabelIsAKnownReasonOrOther() {
        XCTAssertEqual(MetricLabel.reason(nil), "")
        XCTAssertEqual(MetricLabel.reason(""), "")
        XCTAssertEqual(MetricLabel.reason("BadDeviceToken"), "BadDeviceToken")
        XCTAssertEqual(MetricLabel.reason("TransportError"), "TransportError")
        XCTAssertEqual(MetricLabel.reason("HTTP500"), "HTTP500")
        XCTAssertEqual(MetricLabel.reason("HTTP299"), "other")
        XCTAssertEqual(MetricLabel.reason("SomethingAppleInventedTomorrow"), "other")
        XCTAssertEqual(MetricLabel.reason(String(repeating: "A", count: 10_000)), "other")
    }

    func testEveryReasonThePublishEngineRecordsHasItsOwnLabel() {
        let violations: [APNsViolation] = [
            .emptyDeviceToken, .deviceTokenNotHex, .deviceTokenOddLength, .emptyTopic,
            .topicDoesNotMatchPushType(topic: "t.voip", pushType: .alert), .backgroundWithImmediatePriority,
            .emptyPayload, .payloadTooLarge(bytes: 5000, limit: 4096), .payloadNotJSONObject,
            .collapseIDTooLong(bytes: 65), .invalidAPNsID, .invalidExpiration, .controlCharacterInHeader(name: "x"),
        ]
        for violation in violations {
            let name = DeliveryOutcome.name(violation)
            XCTAssertEqual(MetricLabel.reason(name), name, "\(violation)")
        }
        for reason in APNsReason.known {
            XCTAssertEqual(MetricLabel.reason(reason.rawValue), reason.rawValue)
        }
    }
}
