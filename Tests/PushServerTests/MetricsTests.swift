@testable import PushServer
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
}
