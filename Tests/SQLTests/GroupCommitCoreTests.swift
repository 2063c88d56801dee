import SQL
import XCTest

/// The shared group-commit core against a scripted transaction: what it runs in which order, what it hands back to
/// run after COMMIT, and how far it feeds a transaction. No database: the log is the transaction.
final class GroupCommitCoreTests: XCTestCase {
    /// A transaction that logs each statement and write, and fails the statements it is told to.
    final class Script: GroupTransaction {
        var log: [String] = []
        /// Statements (as logged) that throw `Broken`.
        var failing: Set<String> = []
        var isOpen = true

        struct Broken: Error {}

        private func statement(_ text: String) throws {
            log.append(text)
            if failing.contains(text) { throw Broken() }
        }

        func begin() throws { try statement("BEGIN") }
        func savepoint() throws { try statement("SAVEPOINT") }
        func rollbackToSavepoint() throws { try statement("ROLLBACK TO") }
        func releaseSavepoint() throws { try statement("RELEASE") }
        func commit() throws { try statement("COMMIT") }
        func rollback() { log.append("ROLLBACK") }
    }

    /// A write: its name, its rows, and what running it does.
    struct Write {
        enum Outcome { case keep, fail, retry, abort, closeTransaction }
        var name: String
        var cost = 1
        var outcome = Outcome.keep

        init(_ name: String, cost: Int = 1, _ outcome: Outcome = .keep) {
            self.name = name
            self.cost = cost
            self.outcome = outcome
        }
    }

    struct WriteError: Error, Equatable {
        let name: String
    }

    /// Runs `first` (and what `more` feeds) through `core` on `script`; each write logs `run <name>` and its
    /// completion logs `done <name>`.
    private func run(
        _ first: [Write], on script: Script, core: GroupCommit<Write> = GroupCommit(),
        more: (Int, Int) -> [Write] = { _, _ in [] }
    ) -> GroupCommitResult<Write> {
        core.run(
            first, in: script, more: more,
            write: { write, _ in
                script.log.append("run \(write.name)")
                if write.outcome == .closeTransaction { script.isOpen = false }
                if write.outcome != .keep { throw WriteError(name: write.name) }
                return { script.log.append("done \(write.name)") }
            },
            classify: { _, write in
                switch write.outcome {
                case .retry: .runAgainAlone
                case .abort: .abortBatch
                default: .failAfterCommit
                }
            })
    }

    private func names(_ writes: [Write]) -> [String] { writes.map(\.name) }

    func testAFailedWriteIsRolledBackToItsSavepointAndTheOthersCommit() throws {
        let script = Script()
        let result = run([Write("a"), Write("b", .fail), Write("c")], on: script)
        XCTAssertEqual(
            script.log,
            [
                "BEGIN", "SAVEPOINT", "run a", "RELEASE", "SAVEPOINT", "run b", "ROLLBACK TO", "RELEASE",
                "SAVEPOINT", "run c", "RELEASE", "COMMIT",
            ])
        guard case .committed(let writes, let completions, let failed, let again) = result else {
            return XCTFail("the batch failed: \(result)")
        }
        XCTAssertEqual(names(writes), ["a", "b", "c"])
        XCTAssertEqual(completions.count, 2)
        XCTAssertEqual(failed.map(\.write.name), ["b"])
        XCTAssertEqual(failed.map { $0.error as? WriteError }, [WriteError(name: "b")])
        XCTAssertTrue(again.isEmpty)
    }

    func testCompletionsRunOnlyAfterCommitAndOnlyWhenTheCallerRunsThem() throws {
        let script = Script()
        let result = run([Write("a"), Write("b")], on: script)
        // The core ran none: the backend reports the batch first, then resumes its callers.
        XCTAssertFalse(script.log.contains { $0.hasPrefix("done") })
        guard case .committed(_, let completions, _, _) = result else { return XCTFail("the batch failed") }
        for completion in completions { completion() }
        XCTAssertEqual(Array(script.log.suffix(3)), ["COMMIT", "done a", "done b"])
    }

    func testAFailedCommitFailsEveryWriteRunsNoCompletionAndSaysCommitWasSent() throws {
        let script = Script()
        script.failing = ["COMMIT"]
        let result = run([Write("a"), Write("b", .fail)], on: script)
        XCTAssertEqual(Array(script.log.suffix(2)), ["COMMIT", "ROLLBACK"])
        guard case .failed(let writes, let error, let commitSent) = result else {
            return XCTFail("committed: \(result)")
        }
        XCTAssertEqual(names(writes), ["a", "b"])
        XCTAssertTrue(error is Script.Broken)
        XCTAssertTrue(commitSent)
        XCTAssertFalse(script.log.contains { $0.hasPrefix("done") })
    }

    func testAWriteThatAbortsTheBatchFailsEveryWriteTakenWithItsErrorBeforeCommit() throws {
        let script = Script()
        let result = run([Write("a"), Write("b", .abort), Write("c")], on: script)
        // Neither rolled back to its savepoint nor followed by another write: the transaction is gone.
        XCTAssertEqual(
            script.log, ["BEGIN", "SAVEPOINT", "run a", "RELEASE", "SAVEPOINT", "run b", "ROLLBACK"])
        guard case .failed(let writes, let error, let commitSent) = result else {
            return XCTFail("committed: \(result)")
        }
        // c was taken, so it fails with the others although it never ran.
        XCTAssertEqual(names(writes), ["a", "b", "c"])
        XCTAssertEqual(error as? WriteError, WriteError(name: "b"))
        XCTAssertFalse(commitSent)
    }

    func testAWriteAfterWhichTheTransactionIsNoLongerOpenFailsTheBatch() throws {
        // SQLite after a disk-full or I/O error: it rolled the whole transaction back, a's changes too.
        let script = Script()
        let result = run([Write("a"), Write("b", .closeTransaction), Write("c")], on: script)
        XCTAssertFalse(script.log.contains("ROLLBACK TO"))
        XCTAssertFalse(script.log.contains("COMMIT"))
        XCTAssertFalse(script.log.contains("run c"))
        guard case .failed(let writes, let error, _) = result else { return XCTFail("committed: \(result)") }
        XCTAssertEqual(names(writes), ["a", "b", "c"])
        XCTAssertEqual(error as? WriteError, WriteError(name: "b"))
    }

    func testAFailedBeginOrSavepointStatementFailsTheBatch() throws {
        for statement in ["BEGIN", "ROLLBACK TO"] {
            let script = Script()
            script.failing = [statement]
            let result = run([Write("a", .fail), Write("b")], on: script)
            guard case .failed(let writes, let error, let commitSent) = result else {
                return XCTFail("\(statement): committed")
            }
            XCTAssertEqual(names(writes), ["a", "b"], statement)
            XCTAssertTrue(error is Script.Broken, statement)
            XCTAssertFalse(commitSent, statement)
            XCTAssertEqual(script.log.last, "ROLLBACK", statement)
            XCTAssertFalse(script.log.contains("run b"), statement)
        }
    }

    func testAWriteAskedToRunAgainIsRolledBackAndReturnedNotFailed() throws {
        let script = Script()
        let result = run([Write("a", .retry), Write("b")], on: script)
        XCTAssertEqual(
            Array(script.log.prefix(5)), ["BEGIN", "SAVEPOINT", "run a", "ROLLBACK TO", "RELEASE"])
        guard case .committed(_, let completions, let failed, let again) = result else {
            return XCTFail("the batch failed")
        }
        XCTAssertEqual(names(again), ["a"])
        XCTAssertTrue(failed.isEmpty)
        XCTAssertEqual(completions.count, 1)
    }

    func testEachWriteIsToldWhetherAWriteBeforeItWasKept() throws {
        let script = Script()
        var follows: [String: Bool] = [:]
        _ = GroupCommit<Write>().run(
            [Write("a", .fail), Write("b"), Write("c")], in: script,
            write: { write, followsKeptWrites in
                follows[write.name] = followsKeptWrites
                if write.outcome == .fail { throw WriteError(name: write.name) }
                return {}
            },
            classify: { _, _ in .failAfterCommit })
        // a was rolled back, so b follows no kept write; c follows b.
        XCTAssertEqual(follows, ["a": false, "b": false, "c": true])
    }

    func testAFixedBatchIsNeverFed() throws {
        let script = Script()
        var asked = 0
        let result = run([Write("a")], on: script) { _, _ in
            asked += 1
            return [Write("late")]
        }
        XCTAssertEqual(asked, 0)
        XCTAssertEqual(names(result.writes), ["a"])
    }

    func testTheFeedStopsAtTheCountBudget() throws {
        let core = GroupCommit<Write>(
            budget: GroupCommitBudget(count: 5, cost: 100, duration: .seconds(3_600)), cost: \.cost, now: { .zero })
        var asked: [[Int]] = []
        var fed = 0
        let result = run([Write("a"), Write("b")], on: Script(), core: core) { maxCount, maxCost in
            asked.append([maxCount, maxCost])
            // Slices of at most two, as SQLite's writer takes them.
            return (0..<min(2, maxCount)).map { _ in
                fed += 1
                return Write("fed\(fed)")
            }
        }
        XCTAssertEqual(asked, [[3, 98], [1, 96]])
        XCTAssertEqual(result.writes.count, 5)
    }

    func testTheFeedStopsAtTheCostBudget() throws {
        let core = GroupCommit<Write>(
            budget: GroupCommitBudget(count: 100, cost: 25, duration: .seconds(3_600)), cost: \.cost, now: { .zero })
        var asked: [[Int]] = []
        let result = run([Write("a", cost: 10)], on: Script(), core: core) { maxCount, maxCost in
            asked.append([maxCount, maxCost])
            return [Write("more", cost: 10)]
        }
        // 10, then 20 rows: room left; 30 rows: over the budget, not asked again.
        XCTAssertEqual(asked, [[99, 15], [98, 5]])
        XCTAssertEqual(result.writes.count, 3)
    }

    func testTheFeedStopsOnceTheTimeBudgetIsSpent() throws {
        var clock: Int64 = 1_000
        let core = GroupCommit<Write>(
            budget: GroupCommitBudget(count: 100, cost: 100, duration: .nanoseconds(50)), cost: \.cost,
            now: { .nanoseconds(clock) })
        var asked = 0
        let result = run([Write("a")], on: Script(), core: core) { _, _ in
            asked += 1
            // Each slice takes 20 ns: at 1,040 there is time for one more, at 1,060 none.
            clock += 20
            return [Write("more")]
        }
        XCTAssertEqual(asked, 3)
        XCTAssertEqual(result.writes.count, 4)
    }

    func testTheFeedStopsWhenNothingMoreIsQueuedAndTheTransactionCommits() throws {
        let script = Script()
        let core = GroupCommit<Write>(
            budget: GroupCommitBudget(count: 100, cost: 100, duration: .seconds(3_600)), cost: \.cost, now: { .zero })
        var queued = [Write("b")]
        let result = run([Write("a")], on: script, core: core) { _, _ in
            defer { queued = [] }
            return queued
        }
        XCTAssertEqual(names(result.writes), ["a", "b"])
        XCTAssertEqual(script.log.last, "COMMIT")
    }
}
