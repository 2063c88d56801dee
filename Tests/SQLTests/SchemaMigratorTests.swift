import SQL
import XCTest

/// The shared migrator against a history kept in memory: the order, the one transaction per step, the refusal of a
/// newer database and a step another migrator applied while this one waited for its lock.
final class SchemaMigratorTests: XCTestCase {
    /// A database reduced to what the migrator sees: the statements run and the version, both committed only when
    /// the step's transaction ends well.
    final class History: SchemaHistory {
        struct State: Equatable {
            var version = 0
            var statements: [String] = []
        }

        var committed = State()
        var transactions = 0
        /// A statement that fails as SQL would.
        var failing: String?
        /// Runs when a transaction has begun (and holds the lock), before the migrator reads the version.
        var onBegin: (inout State) -> Void = { _ in }

        struct Failure: Error {}

        func step<T>(_ body: (Box) throws -> T) throws -> T {
            transactions += 1
            let open = Box(committed)
            onBegin(&open.state)
            let value = try body(open)
            committed = open.state
            return value
        }

        func appliedVersion(_ connection: Box) throws -> Int { connection.state.version }

        func apply(_ sql: String, as version: Int, _ connection: Box) throws {
            connection.state.statements.append(sql)
            if sql == failing { throw Failure() }
            connection.state.version = version
        }

        /// The open transaction's view of the database.
        final class Box {
            var state: State
            init(_ state: State) { self.state = state }
        }
    }

    struct Newer: Error, Equatable {
        let found: Int
        let newestKnown: Int
    }

    private func refuse(_ found: Int, _ newestKnown: Int) -> any Error { Newer(found: found, newestKnown: newestKnown) }

    func testAppliesOnlyTheMissingStepsInOrderOneTransactionEach() throws {
        let history = History()
        var logged: [Int] = []
        XCTAssertEqual(try SchemaMigrator(steps: ["a"]).migrate(history, refuse: refuse) { logged.append($0) }, 0)
        XCTAssertEqual(
            try SchemaMigrator(steps: ["a", "b", "c"]).migrate(history, refuse: refuse) { logged.append($0) }, 1)
        XCTAssertEqual(history.committed, History.State(version: 3, statements: ["a", "b", "c"]))
        XCTAssertEqual(logged, [1, 2, 3])
        // Each step is a transaction, and one more finds nothing left to do: 2 + 3.
        XCTAssertEqual(history.transactions, 5)
    }

    func testAFailingStepIsRolledBackAndTheStepsBeforeItStay() throws {
        let history = History()
        history.failing = "b"
        XCTAssertThrowsError(try SchemaMigrator(steps: ["a", "b", "c"]).migrate(history, refuse: refuse)) {
            XCTAssertTrue($0 is History.Failure)
        }
        XCTAssertEqual(history.committed, History.State(version: 1, statements: ["a"]))
    }

    func testRefusesADatabaseNewerThanItsStepsBeforeWritingAnything() throws {
        let history = History()
        history.committed.version = 3
        XCTAssertThrowsError(try SchemaMigrator(steps: ["a", "b"]).migrate(history, refuse: refuse)) {
            XCTAssertEqual($0 as? Newer, Newer(found: 3, newestKnown: 2))
        }
        XCTAssertEqual(history.committed, History.State(version: 3, statements: []))
    }

    /// Two nodes starting together: while this one waited for the lock, the other applied step 2. The version is
    /// read again inside each step's transaction, so step 2 is not run twice, and the version found is the first.
    func testAStepAnotherMigratorAppliedWhileThisOneWaitedIsNotRunAgain() throws {
        let history = History()
        history.onBegin = { state in
            if state.version == 1 { state = History.State(version: 2, statements: state.statements + ["b (other)"]) }
        }
        XCTAssertEqual(try SchemaMigrator(steps: ["a", "b", "c"]).migrate(history, refuse: refuse), 0)
        XCTAssertEqual(history.committed, History.State(version: 3, statements: ["a", "b (other)", "c"]))
    }
}
