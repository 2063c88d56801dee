import APNsClient
import Locking
import PushStore

/// The APNs client's `ProviderTokenStore` over the push store: a restarted server (or another node on the same
/// database) reuses the provider token APNs already knows instead of signing a new one, and a compare-and-swap on
/// the stored row lets only one of them sign per refresh period.
///
/// The client calls it from tasks, a few times per hour (its connection threads hand the request that needs a
/// token to a task and carry on); each call waits for the store's threads at most `timeout`.
package struct PushStoreProviderTokens: ProviderTokenStore {
    package let store: any ProviderTokenStorage
    /// How long a call waits for the store before it fails (the client then carries on with its own token).
    package var timeout: Duration = .seconds(10)

    /// The token store over `store`, each call waiting for it at most `timeout`.
    package init(store: any ProviderTokenStorage, timeout: Duration = .seconds(10)) {
        self.store = store
        self.timeout = timeout
    }

    /// A store call that did not answer within `timeout`.
    package struct TimedOut: Error, CustomStringConvertible {
        package var description: String { "the store did not answer in time" }
    }

    package func load(teamID: String, keyID: String) async throws -> StoredProviderToken? {
        let store = self.store
        return try await withinTimeout { try await store.providerToken(teamID: teamID, keyID: keyID) }.map {
            StoredProviderToken(jwt: $0.jwt, issuedAt: Int($0.issuedAt))
        }
    }

    package func compareAndSwap(
        teamID: String, keyID: String, expected: StoredProviderToken?, new: StoredProviderToken
    ) async throws -> StoredProviderToken {
        let store = self.store
        let record = ProviderTokenRecord(jwt: new.jwt, issuedAt: Int64(new.issuedAt))
        let stored = try await withinTimeout {
            try await store.swapProviderToken(teamID: teamID, keyID: keyID, expectedJWT: expected?.jwt, new: record)
        }
        return StoredProviderToken(jwt: stored.jwt, issuedAt: Int(stored.issuedAt))
    }

    /// Runs `body` in a task of its own and waits for it at most `timeout` (the store's calls do not end early on
    /// cancellation, so the wait is on the answer, not on the task).
    private func withinTimeout<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) async throws -> T {
        let outcome = WaitableState<Result<T, any Error>?>(nil)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.update { $0 = result }
        }
        guard await outcome.wait(until: { $0 != nil }, timeout: timeout),
            let result = outcome.read({ $0 })
        else { throw TimedOut() }
        return try result.get()
    }
}
