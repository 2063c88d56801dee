import Lifecycle
import Locking
import Logging
import XCTest

final class ServiceGroupTests: XCTestCase {
    let journal = Journal()

    func group(_ services: [any Service], grace: Duration = .seconds(30)) -> ServiceGroup {
        ServiceGroup(services: services, gracePeriod: grace, logger: .disabled)
    }

    func fakes(_ names: String...) -> [FakeService] {
        names.map { FakeService(name: $0, journal: journal) }
    }

    func testShutdownCancelsInGivenOrderAndAwaitsEachReturnBeforeTheNext() async {
        let drainA = Gate()
        let drainB = Gate()
        var services = fakes("a", "b", "c")
        services[0].drain = drainA
        services[1].drain = drainB
        let group = group(services)
        let running = Task { await group.run() }
        for name in ["a", "b", "c"] { await journal.wait(for: "\(name) started") }

        group.shutdown()
        await journal.wait(for: "a cancelled")
        XCTAssertFalse(journal.entries.contains("b cancelled"), "b is cancelled only once a returned")
        drainA.open()
        await journal.wait(for: "b cancelled")
        XCTAssertFalse(journal.entries.contains("c cancelled"), "c is cancelled only once b returned")
        drainB.open()
        let report = await running.value

        XCTAssertEqual(report.stopped, ["a", "b", "c"])
        XCTAssertEqual(report.unfinished, [])
        XCTAssertTrue(report.failures.isEmpty)
        XCTAssertEqual(
            journal.entries.filter { !$0.hasSuffix("started") },
            [
                "a cancelled", "a returned", "b cancelled", "b returned", "c cancelled", "c returned",
            ])
    }

    func testCancellingTheTaskRunningTheGroupStopsItInOrder() async {
        let group = group(fakes("http", "engine", "ops"))
        let running = Task { await group.run() }
        for name in ["http", "engine", "ops"] { await journal.wait(for: "\(name) started") }

        running.cancel()
        let report = await running.value

        XCTAssertEqual(report.stopped, ["http", "engine", "ops"])
        XCTAssertEqual(
            journal.entries.filter { $0.hasSuffix("cancelled") },
            ["http cancelled", "engine cancelled", "ops cancelled"])
    }

    func testGracePeriodExpiryStopsWaitingAndNamesTheServicesThatDidNotReturn() async {
        let stuck = Gate()
        var services = fakes("a", "b", "c")
        services[1].drain = stuck  // b ignores its cancellation until the test is over
        let group = group(services, grace: .milliseconds(50))
        let running = Task { await group.run() }
        for name in ["a", "b", "c"] { await journal.wait(for: "\(name) started") }

        group.shutdown()
        let report = await running.value

        XCTAssertEqual(report.stopped, ["a"])
        XCTAssertEqual(report.unfinished, ["b", "c"])
        XCTAssertFalse(journal.entries.contains("b returned"))
        // The rest are still cancelled, just not awaited.
        await journal.wait(for: "c cancelled")
        stuck.open()
        await journal.wait(for: "b returned")
    }

    func testAThrowingServiceStopsTheOthersInOrder() async {
        var services = fakes("a", "b", "c")
        services[1].failAtStart = FakeError(message: "cannot bind")
        let report = await group(services).run()

        XCTAssertEqual(report.stopped, ["b", "a", "c"])
        XCTAssertEqual(report.failures.map(\.service), ["b"])
        XCTAssertEqual(report.failures.first?.error as? FakeError, FakeError(message: "cannot bind"))
        XCTAssertEqual(journal.entries.filter { $0.hasSuffix("cancelled") }, ["a cancelled", "c cancelled"])
    }

    func testAServiceThatReturnsByItselfLeavesTheOthersRunning() async {
        var services = fakes("janitor", "ops")
        services[0].returnAtStart = true
        let group = group(services)
        let running = Task { await group.run() }
        await journal.wait(for: "janitor returned")
        await journal.wait(for: "ops started")
        XCTAssertFalse(journal.entries.contains("ops cancelled"))

        group.shutdown()
        let report = await running.value
        XCTAssertEqual(report.stopped, ["janitor", "ops"])
        XCTAssertTrue(report.failures.isEmpty)
    }

    func testShutdownBeforeRunStartsEveryServiceAndStopsItAtOnceInOrder() async {
        let group = group(fakes("a", "b", "c"))
        group.shutdown()
        group.shutdown()
        let report = await group.run()

        XCTAssertEqual(report.stopped, ["a", "b", "c"])
        XCTAssertEqual(
            journal.entries.filter { $0.hasSuffix("cancelled") }, ["a cancelled", "b cancelled", "c cancelled"])
    }

    func testCancellationBeforeRunStartsEveryServiceAndStopsItAtOnceInOrder() async {
        let group = group(fakes("a", "b"))
        let running = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await group.run()
        }
        let report = await running.value

        XCTAssertEqual(report.stopped, ["a", "b"])
        XCTAssertEqual(journal.entries.filter { $0.hasSuffix("cancelled") }, ["a cancelled", "b cancelled"])
    }

    func testASecondRunReturnsAtOnceWithoutStartingAnything() async {
        let group = group(fakes("a"))
        group.shutdown()
        _ = await group.run()
        let second = await group.run()
        XCTAssertEqual(second.stopped, [])
        XCTAssertEqual(journal.entries.filter { $0 == "a started" }.count, 1)
    }

    func testOnStoppingIsCalledOnceBeforeTheFirstServiceIsCancelled() async {
        let journal = self.journal
        let group = ServiceGroup(
            services: fakes("http", "ops"), gracePeriod: .seconds(30), logger: .disabled,
            onStopping: { journal.append("stopping") })
        let running = Task { await group.run() }
        await journal.wait(for: "ops started")
        XCTAssertFalse(journal.entries.contains("stopping"))

        group.shutdown()
        running.cancel()
        _ = await running.value
        XCTAssertEqual(
            journal.entries.filter { !$0.hasSuffix("started") },
            [
                "stopping", "http cancelled", "http returned", "ops cancelled", "ops returned",
            ])
    }

    func testTheLogNamesEachServiceAsItStopsAndTheOrderAtTheEnd() async {
        let sink = MemorySink()
        let group = ServiceGroup(
            services: fakes("http", "engine"), gracePeriod: .seconds(30),
            logger: Logger(label: "server", sink: sink))
        group.shutdown()
        _ = await group.run()

        let lines = sink.records.map { record in
            record.message + " "
                + record.metadata.filter { $0.0 != "ms" }.map { "\($0.0)=\($0.1)" }.joined(separator: " ")
        }
        XCTAssertEqual(
            lines,
            [
                "Stopping services reason=requested order=http,engine grace=30.0 seconds",
                "Stopping service service=http",
                "Service stopped service=http",
                "Stopping service service=engine",
                "Service stopped service=engine",
                "Services stopped order=http,engine",
            ])
    }
}

final class MemorySink: LogSink {
    private let lines = Locked<[LogRecord]>([])
    var records: [LogRecord] { lines.withLock { $0 } }
    func write(_ record: LogRecord) { lines.withLock { $0.append(record) } }
}
