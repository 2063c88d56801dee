import APNsClient
import Foundation
import HTTPServer
import Locking
import Observability
import XCTest

@testable import PublishEngine
@testable import PushServer

/// Families of these tests only (the server's are in Sources/Observability/MetricCatalogue.swift).
extension CounterMetric {
    static let requests = CounterMetric("http_requests_total", help: "Requests.", labels: ["route", "status"])
    static let c = CounterMetric("c", help: "C.", labels: ["route", "status"])
    static let cRoute = CounterMetric("c", help: "C.", labels: ["route"])
    static let cPlain = CounterMetric("c", help: "C.")
}

extension GaugeMetric {
    static let queueDepth = GaugeMetric("queue_depth", help: "Jobs waiting.")
    static let g = GaugeMetric("g", help: "G.", labels: ["k"])
    static let gPlain = GaugeMetric("g", help: "G.")
    static let perInstance = GaugeMetric("per_instance", help: "P.", labels: ["beams_instance", "quota"])
}

extension HistogramMetric {
    static let latency = HistogramMetric("latency_seconds", help: "Latency.", labels: ["route"], buckets: [0.1, 1])
    static let h = HistogramMetric("h", help: "H.", labels: ["route"], buckets: [0.1, 1])
    static let h1 = HistogramMetric("h", help: "H.", labels: ["route"], buckets: [1])
    static let hLatency = HistogramMetric("h", help: "H.", labels: ["route"])
    static let hPlain = HistogramMetric("h", help: "H.", buckets: [1])
    static let hInstance = HistogramMetric(
        "h_instance", help: "H.", labels: ["platform", "beams_instance"], buckets: [1])
}

final class MetricsTests: XCTestCase {
    func testRendersCountersGaugesAndCumulativeHistograms() {
        let metrics = Metrics()
        metrics.declare(.requests)
        metrics.declare(.queueDepth)
        metrics.declare(.latency)
        metrics.increment(.requests, ["route": "/a", "status": "200"])
        metrics.increment(.requests, ["route": "/a", "status": "200"], by: 2)
        metrics.set(.queueDepth, to: 7)
        metrics.observe(.latency, ["route": "/a"], 0.05)
        metrics.observe(.latency, ["route": "/a"], 0.5)
        metrics.observe(.latency, ["route": "/a"], 5)
        let text = metrics.render()
        XCTAssertTrue(
            text.contains("# TYPE http_requests_total counter\nhttp_requests_total{route=\"/a\",status=\"200\"} 3\n"))
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

    func testLabelValuesReadBackWhatLabelStringWrote() {
        let key = Metrics.labelString(["beams_instance": "a\"b\\c\nd,quota=\"x\"", "quota": "devices"])
        XCTAssertEqual(
            Metrics.labelValues(key, names: ["beams_instance", "quota"]), ["a\"b\\c\nd,quota=\"x\"", "devices"])
        XCTAssertNil(Metrics.labelValues(key, names: ["quota", "beams_instance"]))
        XCTAssertNil(Metrics.labelValues(key, names: ["beams_instance"]))
        XCTAssertEqual(Metrics.labelValues("", names: []), [])
    }

    func testRetainSeriesDropsTheSeriesOfARefusedLabelValueInEveryFamilyAndKeepsTheRest() {
        let metrics = Metrics(maxSeriesPerFamily: 4)
        metrics.declare(.perInstance)
        metrics.declare(.hInstance)
        metrics.declare(.g)
        for instance in ["kept", "gone", "gone\"quoted"] {
            metrics.set(.perInstance, ["beams_instance": instance, "quota": "devices"], to: 1)
            metrics.observe(.hInstance, ["platform": "fcm", "beams_instance": instance], 0.5)
        }
        metrics.set(.perInstance, ["beams_instance": "kept", "quota": "publishes_per_day"], to: 2)
        metrics.set(.perInstance, ["beams_instance": "past-the-cap", "quota": "devices"], to: 3)  // overflow series
        metrics.set(.g, ["k": "gone"], to: 4)  // another label: untouched

        metrics.retainSeries(label: "beams_instance") { $0 == "kept" }

        let text = metrics.render()
        XCTAssertFalse(text.contains(#"beams_instance="gone"#), text)
        XCTAssertTrue(text.contains(#"per_instance{beams_instance="kept",quota="devices"} 1"#), text)
        XCTAssertTrue(text.contains(#"per_instance{beams_instance="kept",quota="publishes_per_day"} 2"#), text)
        XCTAssertTrue(text.contains(#"per_instance{beams_instance="other",quota="other"} 3"#), text)
        XCTAssertTrue(text.contains(#"h_instance_count{platform="fcm",beams_instance="kept"} 1"#), text)
        XCTAssertEqual(metrics.seriesCount(HistogramMetric.hInstance.family), 1)
        XCTAssertEqual(metrics.value(.g, ["k": "gone"]), 4)
        // A dropped series starts again from nothing when its instance comes back.
        metrics.set(.perInstance, ["beams_instance": "gone", "quota": "devices"], to: 5)
        XCTAssertEqual(metrics.value(.perInstance, ["beams_instance": "gone", "quota": "devices"]), 5)
    }

    func testCollectorsRunBeforeRender() {
        let metrics = Metrics()
        metrics.declare(.gPlain)
        metrics.addCollector { $0.set(.gPlain, to: 42) }
        XCTAssertTrue(metrics.render().contains("g 42\n"))
    }

    // MARK: Bounds

    func testTwoScrapesAtOnceRunTheCollectorsOneScrapeAtATime() {
        // A collector reads its owner's state and writes gauges from it: two scrapes running it at once could land
        // the older read last. Each run here takes 20 ms, so two renders started together overlap unless the
        // registry runs them in turn.
        let metrics = Metrics()
        let running = Locked((now: 0, most: 0))
        metrics.addCollector { metrics in
            running.withLock {
                $0.now += 1
                $0.most = max($0.most, $0.now)
            }
            usleep(20_000)
            running.withLock { $0.now -= 1 }
            metrics.set(.gPlain, to: 1)
        }
        DispatchQueue.concurrentPerform(iterations: 4) { _ in _ = metrics.render() }
        XCTAssertEqual(running.withLock { $0.most }, 1)
    }

    func testSeriesPastTheCapGoToOneOverflowSeries() {
        let metrics = Metrics(maxSeriesPerFamily: 3)
        metrics.declare(.c)
        for i in 0..<100 { metrics.increment(.c, ["route": "/r\(i)", "status": "200"]) }
        XCTAssertEqual(metrics.seriesCount(CounterMetric.c.family), 4)  // three admitted, one overflow
        XCTAssertEqual(metrics.value(.c, ["route": "/r0", "status": "200"]), 1)
        XCTAssertEqual(metrics.value(.c, ["route": "other", "status": "other"]), 97)
        // A series admitted before the cap keeps counting in place.
        metrics.increment(.c, ["route": "/r2", "status": "200"])
        XCTAssertEqual(metrics.value(.c, ["route": "/r2", "status": "200"]), 2)
    }

    func testHistogramAndGaugeSeriesAreCappedToo() {
        let metrics = Metrics(maxSeriesPerFamily: 2)
        metrics.declare(.h1)
        metrics.declare(.g)
        for i in 0..<50 {
            metrics.observe(.h1, ["route": "/r\(i)"], 0.5)
            metrics.set(.g, ["k": "\(i)"], to: Double(i))
        }
        XCTAssertEqual(metrics.seriesCount(HistogramMetric.h1.family), 3)
        XCTAssertEqual(metrics.seriesCount(GaugeMetric.g.family), 3)
        XCTAssertTrue(metrics.render().contains("h_count{route=\"other\"} 48\n"))
        XCTAssertEqual(metrics.value(.g, ["k": "other"]), 49)
    }

    func testFamiliesUsedBeforeAnyDeclarationAreDeclaredOnFirstUse() {
        let metrics = Metrics()
        metrics.increment(.cRoute, ["route": "/b"])
        metrics.observe(.hPlain, [:], 0.5)
        metrics.set(.gPlain, to: 3)
        XCTAssertEqual(
            metrics.render(),
            """
            # HELP c C.
            # TYPE c counter
            c{route="/b"} 1
            # HELP h H.
            # TYPE h histogram
            h_bucket{le="1"} 1
            h_bucket{le="+Inf"} 1
            h_sum 0.5
            h_count 1
            # HELP g G.
            # TYPE g gauge
            g 3

            """)
    }

    func testDeclaringKeepsTheFirstPlaceOfAFamilyInTheOutput() {
        let metrics = Metrics()
        metrics.declare(.gPlain)
        metrics.declare(.cPlain)
        metrics.increment(.cPlain)
        metrics.declare(.gPlain)
        XCTAssertEqual(metrics.render(), "# HELP g G.\n# TYPE g gauge\n# HELP c C.\n# TYPE c counter\nc 1\n")
    }

    func testRenderWhileOtherThreadsCountSeesConsistentFamilies() {
        let metrics = Metrics()
        metrics.declare(.cRoute)
        metrics.declare(.hLatency)
        DispatchQueue.concurrentPerform(iterations: 8) { worker in
            for i in 0..<2000 {
                if worker == 0 && i % 100 == 0 { _ = metrics.render() }
                metrics.increment(.cRoute, ["route": "/r\(i % 10)"])
                metrics.observe(.hLatency, ["route": "/r\(i % 10)"], 0.001)
            }
        }
        XCTAssertEqual((0..<10).map { metrics.value(.cRoute, ["route": "/r\($0)"]) }.reduce(0, +), 16_000)
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

/// Counting in batches (`MetricsBatch`, `HTTPRequestMetrics`): the same series and values as one call per event.
final class MetricsBatchTests: XCTestCase {
    func testBatchRendersExactlyWhatSingleCallsRender() {
        let single = Metrics()
        let batched = Metrics()
        for metrics in [single, batched] {
            metrics.declare(.c)
            metrics.declare(.h)
        }
        let values = [0.05, 0.1, 0.5, 5, 0.07]
        for value in values {
            single.increment(.c, ["route": "/a", "status": "200"])
            single.observe(.h, ["route": "/a"], value)
        }
        single.increment(.c, ["route": "/b", "status": "404"], by: 2)
        var tally = HistogramCounts(buckets: HistogramMetric.h.buckets)
        for value in values { tally.record(value) }
        var batch = MetricsBatch()
        batch.increment(.c, [("route", "/a"), ("status", "200")], by: Double(values.count))
        batch.increment(.c, [("route", "/b"), ("status", "404")], by: 2)
        batch.observe(.h, [("route", "/a")], tally)
        batched.apply(batch)
        XCTAssertEqual(batched.render(), single.render())
        XCTAssertTrue(batched.render().contains("h_bucket{route=\"/a\",le=\"0.1\"} 3\n"))
        XCTAssertTrue(batched.render().contains("h_count{route=\"/a\"} 5\n"))
    }

    func testBatchSeriesPastTheCapGoToTheOverflowSeries() {
        let metrics = Metrics(maxSeriesPerFamily: 2)
        metrics.declare(.cRoute)
        metrics.declare(.h1)
        var batch = MetricsBatch()
        for i in 0..<5 {
            batch.increment(.cRoute, [("route", "/r\(i)")], by: 3)
            var tally = HistogramCounts(buckets: [1])
            tally.record(0.5)
            batch.observe(.h1, [("route", "/r\(i)")], tally)
        }
        metrics.apply(batch)
        XCTAssertEqual(metrics.seriesCount(CounterMetric.cRoute.family), 3)
        XCTAssertEqual(metrics.value(.cRoute, ["route": "/r1"]), 3)
        XCTAssertEqual(metrics.value(.cRoute, ["route": "other"]), 9)
        XCTAssertTrue(metrics.render().contains("h_count{route=\"other\"} 3\n"))
    }

    func testHistogramCountsForOtherBucketsAreIgnoredAndBatchesDeclareTheirFamilies() {
        let metrics = Metrics()
        metrics.declare(.h)
        var tally = HistogramCounts(buckets: [0.5])
        tally.record(0.2)
        var batch = MetricsBatch()
        batch.observe(.h, [("route", "/a")], tally)
        batch.increment(.cRoute, [("route", "/b")])
        metrics.apply(batch)
        XCTAssertFalse(metrics.render().contains("h_count"))
        XCTAssertTrue(metrics.render().hasSuffix("# TYPE c counter\nc{route=\"/b\"} 1\n"))
    }

    func testHTTPRequestMetricsCountsEveryRecordOfABatch() {
        let metrics = Metrics()
        Application.declareMetrics(metrics)
        let requests = HTTPRequestMetrics(metrics: metrics)
        func record(_ route: String, _ method: String, _ status: Int, micros: Int64) -> AccessLogRecord {
            AccessLogRecord(
                method: method, route: route, status: status, bytesIn: 10, bytesOut: 20,
                duration: .microseconds(micros), requestID: "r", peer: "127.0.0.1:1", isTLS: false)
        }
        let batch =
            (0..<100).map { _ in record("/health", "GET", 200, micros: 300) }
            + (0..<7).map { _ in record("-", "BREW", 404, micros: 250_000) }
            + [record("/health", "GET", 503, micros: 20_000_000), record("/health", "HEAD", 200, micros: 700)]
        requests.record(batch)
        requests.record(Array(batch.prefix(10)))
        let name = CounterMetric.httpRequests
        XCTAssertEqual(metrics.value(name, ["route": "/health", "method": "GET", "status": "200"]), 110)
        XCTAssertEqual(metrics.value(name, ["route": "-", "method": "other", "status": "404"]), 7)
        XCTAssertEqual(metrics.value(name, ["route": "/health", "method": "GET", "status": "503"]), 1)
        XCTAssertEqual(metrics.value(name, ["route": "/health", "method": "HEAD", "status": "200"]), 1)
        let text = metrics.render()
        let duration = HistogramMetric.httpRequestDuration.family.name
        XCTAssertTrue(text.contains("\(duration)_bucket{route=\"/health\",le=\"0.0005\"} 110\n"), text)
        XCTAssertTrue(text.contains("\(duration)_bucket{route=\"/health\",le=\"0.001\"} 111\n"), text)
        XCTAssertTrue(text.contains("\(duration)_bucket{route=\"/health\",le=\"10\"} 111\n"), text)
        XCTAssertTrue(text.contains("\(duration)_bucket{route=\"/health\",le=\"+Inf\"} 112\n"), text)
        XCTAssertTrue(text.contains("\(duration)_count{route=\"-\"} 7\n"), text)
        XCTAssertTrue(text.contains("\(duration)_sum{route=\"-\"} 1.75\n"), text)
    }
}
