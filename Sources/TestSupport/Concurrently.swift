/// Runs `body` over `items` with at most `width` in flight (the store benchmarks' load pattern: many concurrent
/// callers sharing the store's group commit).
package func concurrently<T: Sendable>(
    _ items: [T], width: Int, _ body: @escaping @Sendable (T) async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var iterator = items.makeIterator()
        for _ in 0..<width {
            guard let item = iterator.next() else { break }
            group.addTask { try await body(item) }
        }
        while try await group.next() != nil {
            guard let item = iterator.next() else { continue }
            group.addTask { try await body(item) }
        }
    }
}
