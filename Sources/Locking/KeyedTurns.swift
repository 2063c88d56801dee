/// Async work that takes turns per key: `withTurn(key)` runs its body only while no other body for the same key runs;
/// later callers wait (suspended, not blocking a thread) and go in arrival order. Different keys never wait for each
/// other.
///
/// Used where one logical write is split into several store operations (SQLite's large interest sets, written in
/// steps so another instance's writes can commit between them) and two such writes on one key must not interleave.
/// Memory is bounded by the callers in flight: a key's entry exists only while a body for it runs.
package final class KeyedTurns<Key: Hashable & Sendable>: Sendable {
    /// For each key whose turn is taken, the callers waiting for it, first first.
    private let waiting = Locked<[Key: FIFO<CheckedContinuation<Void, Never>>]>([:])

    package init() {}

    /// Runs `body` once every earlier caller for `key` has finished.
    package func withTurn<T>(_ key: Key, _ body: () async throws -> T) async rethrows -> T {
        await acquire(key)
        defer { release(key) }
        return try await body()
    }

    /// Keys whose turn is taken (for tests and metrics).
    package var activeKeys: Int { waiting.withLock { $0.count } }

    /// Callers waiting for `key`'s turn (for tests).
    package func waiters(for key: Key) -> Int { waiting.withLock { $0[key]?.count ?? 0 } }

    private func acquire(_ key: Key) async {
        let free = waiting.withLock { map -> Bool in
            guard map[key] == nil else { return false }
            map[key] = FIFO()
            return true
        }
        if free { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            // The holder may have finished since the check above: then the turn is free and taken here.
            let taken = waiting.withLock { map -> Bool in
                guard map[key] != nil else {
                    map[key] = FIFO()
                    return true
                }
                map[key]!.append(continuation)
                return false
            }
            if taken { continuation.resume() }
        }
    }

    /// Hands the turn to the next waiter (who then holds it), or frees the key.
    private func release(_ key: Key) {
        let next = waiting.withLock { map -> CheckedContinuation<Void, Never>? in
            // Popped in place (`map[key]?`), in O(1): a copy taken out of the map shared its buffer, so each
            // release copied every waiter left (the 1,200 requests of a fan-out's first window queue here for
            // the provider token: 720,000 continuation copies per fan-out; docs/BENCHMARKS.md).
            if let first = map[key]?.popFirst() { return first }
            map[key] = nil
            return nil
        }
        next?.resume()
    }
}
