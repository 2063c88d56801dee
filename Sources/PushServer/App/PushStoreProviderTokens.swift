import APNsClient
import Dispatch
import Locking
import PushStore

/// The APNs client's `ProviderTokenStore` over the push store: a restarted server (or another node on the same
/// database) reuses the provider token APNs already knows instead of signing a new one, and a compare-and-swap on
/// the stored row lets only one of them sign per refresh period.
///
/// The client calls it from its own connection threads (never the Swift concurrency pool), a few times per hour;
/// each call blocks that thread until the store's threads answered, at most `timeout` seconds.
struct PushStoreProviderTokens: ProviderTokenStore {
    let store: any ProviderTokenStorage
    /// Seconds a call waits for the store before it fails (the client then carries on with its own token).
    var timeout: Double = 10

    /// A store call that did not answer within `timeout`.
    struct TimedOut: Error, CustomStringConvertible {
        var description: String { "the store did not answer in time" }
    }

    func load(teamID: String, keyID: String) throws -> StoredProviderToken? {
        let store = self.store
        return try blocking { try await store.providerToken(teamID: teamID, keyID: keyID) }.map {
            StoredProviderToken(jwt: $0.jwt, issuedAt: Int($0.issuedAt))
        }
    }

    func compareAndSwap(
        teamID: String, keyID: String, expected: StoredProviderToken?, new: StoredProviderToken
    ) throws -> StoredProviderToken {
        let store = self.store
        let record = ProviderTokenRecord(jwt: new.jwt, issuedAt: Int64(new.issuedAt))
        let stored = try blocking {
            try await store.swapProviderToken(teamID: teamID, keyID: keyID, expectedJWT: expected?.jwt, new: record)
        }
        return StoredProviderToken(jwt: stored.jwt, issuedAt: Int(stored.issuedAt))
    }

    /// Runs `body` as a task and blocks the calling thread (a client connection thread) until it finishes.
    private func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = Locked<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
            done.signal()
        }
        guard done.wait(timeout: .now() + timeout) == .success, let result = outcome.withLock({ $0 }) else {
            throw TimedOut()
        }
        return try result.get()
    }
}
