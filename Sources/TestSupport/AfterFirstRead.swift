import SQL

/// A connection that forwards every statement to `base` and runs `then` once, after the first statement that read
/// rows: a test commits other connections' writes between two statements of one read, to check that the read sees
/// one snapshot (`SQLStoreBackend.read`).
package final class AfterFirstRead<Base: SQLConnection>: SQLConnection {
    private let base: Base
    private var then: (() -> Void)?

    package init(_ base: Base, then: @escaping () -> Void) {
        self.base = base
        self.then = then
    }

    package var dialect: SQLDialect { base.dialect }

    package func perform(_ query: SQLQuery) throws -> Int { try base.perform(query) }

    package func forEachRow(_ query: SQLQuery, _ body: (Base.Row) throws -> Void) throws {
        try base.forEachRow(query, body)
        ranFirst()
    }

    package func fetchOne<T>(_ query: SQLQuery, _ transform: (Base.Row) throws -> T) throws -> T? {
        defer { ranFirst() }
        return try base.fetchOne(query, transform)
    }

    private func ranFirst() {
        guard let then else { return }
        self.then = nil
        then()
    }
}
