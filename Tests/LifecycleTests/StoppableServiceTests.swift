import Lifecycle
import Locking
import XCTest

final class StoppableServiceTests: XCTestCase {
    func testCancellationCallsStopAndRunReturnsOnlyAfterBothFinished() async throws {
        let journal = Journal()
        let stopped = Gate(), stopFinishes = Gate()
        let service = StoppableService(name: "part", run: {
            journal.append("working")
            await stopped.wait()
            // The part's own run does not see the caller's cancellation: its waits are not cut short.
            journal.append(Task.isCancelled ? "work saw cancellation" : "work returned")
        }, stop: {
            journal.append("stop called")
            stopped.open()
            await stopFinishes.wait()
            journal.append("stop finished")
        })
        let running = Task { try await service.run() }
        await journal.wait(for: "working")

        running.cancel()
        await journal.wait(for: "work returned")
        XCTAssertFalse(journal.entries.contains("stop finished"))
        stopFinishes.open()
        try await running.value

        XCTAssertEqual(journal.entries, ["working", "stop called", "work returned", "stop finished"])
    }

    func testAnErrorFromRunIsThrownWithoutCallingStop() async {
        let journal = Journal()
        let service = StoppableService(name: "part", run: { throw FakeError(message: "bind failed") },
                                       stop: { journal.append("stop called") })
        do {
            try await service.run()
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error as? FakeError, FakeError(message: "bind failed"))
        }
        XCTAssertEqual(journal.entries, [])
    }
}
