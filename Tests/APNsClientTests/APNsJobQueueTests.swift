import XCTest

@testable import APNsClient

final class APNsJobQueueTests: XCTestCase {
    private func job(_ index: Int) throws -> APNsJob {
        let request = APNsRequest(
            deviceToken: String(format: "%064x", index + 1), payload: Array(#"{"aps":{}}"#.utf8),
            topic: "com.example.app")
        let prepared = try APNsHeaderRules.prepare(request)
        return APNsJob(request: request, prepared: prepared) { _ in }
    }

    func testPopsInPushOrderAcrossCompactions() throws {
        var queue = APNsJobQueue()
        let jobs = try (0..<5000).map(job)
        var popped: [APNsJob] = []
        // Interleaved so the head passes the compaction threshold while items remain behind it.
        for job in jobs.prefix(3000) { queue.append(job) }
        for _ in 0..<2000 { popped.append(try XCTUnwrap(queue.popFirst())) }
        for job in jobs.dropFirst(3000) { queue.append(job) }
        XCTAssertEqual(queue.count, 3000)
        while let job = queue.popFirst() { popped.append(job) }
        XCTAssertEqual(popped.count, jobs.count)
        XCTAssertTrue(zip(popped, jobs).allSatisfy { $0 === $1 }, "first in, first out")
        XCTAssertEqual(queue.count, 0)
        XCTAssertNil(queue.popFirst())
    }
}
