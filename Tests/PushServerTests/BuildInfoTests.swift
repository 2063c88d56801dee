import Observability
import PushServer
import XCTest

/// The test binary links no build-info object (only `make` does, see Sources/CBuildInfo/shim.h): the weak symbols
/// resolve to NULL and must read as "unknown" rather than crash. The linked-in case is checked on the packaged
/// binary by Tests/deb/test_package.py.
final class BuildInfoTests: XCTestCase {
    func testPlainSwiftBuildReportsUnknownCommitAndDate() {
        XCTAssertEqual(BuildInfo.commit, "unknown")
        XCTAssertEqual(BuildInfo.date, "unknown")
        XCTAssertFalse(BuildInfo.version.isEmpty)
    }

    func testBuildInfoMetricIsOneSeriesWithVersionAndCommit() {
        let metrics = Metrics()
        Application.declareMetrics(metrics)
        let line = "push_server_build_info{version=\"\(BuildInfo.version)\",commit=\"unknown\"} 1\n"
        XCTAssertTrue(metrics.render().contains("# TYPE push_server_build_info gauge\n" + line))
    }
}
