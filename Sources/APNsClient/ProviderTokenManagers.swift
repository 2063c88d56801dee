import Foundation
import Locking
import Logging

/// The process's one `ProviderTokenManager` per (team id, key id), shared by every `APNsClient` pool of the key
/// (sandbox and production are separate pools) and by `APNsBroadcastClient`; thread-safe.
///
/// Apple's refresh floor (a new token at most every 20 minutes, `TooManyProviderTokenUpdates` otherwise) is per key,
/// so one token state per key per process is the rule: a pool or broadcast call that finds the token due or expired
/// refreshes it for all of them, and the others use that token instead of signing their own. The
/// `ProviderTokenStore` extends the same sharing to restarted processes and other nodes.
///
/// The map holds one entry per key the configuration names (apps' credentials), so it is bounded by configuration,
/// not by input. The first credentials seen for a (team, key) provide the signer.
package final class ProviderTokenManagers: Sendable {
    private struct Key: Hashable {
        var teamID: String
        var keyID: String
    }

    private let managers = Locked<[Key: ProviderTokenManager]>([:])
    private let policy: ProviderTokenPolicy
    private let store: (any ProviderTokenStore)?
    private let clock: @Sendable () -> Date
    private let logger: Logger

    /// - Parameters:
    ///   - store: where tokens are shared with restarted processes and other nodes; nil keeps them in memory.
    ///   - clock: the wall clock for `iat`; tests pass a movable one.
    package init(
        policy: ProviderTokenPolicy = ProviderTokenPolicy(), store: (any ProviderTokenStore)? = nil,
        clock: @escaping @Sendable () -> Date = { Date() }, logger: Logger = .disabled
    ) {
        self.policy = policy
        self.store = store
        self.clock = clock
        self.logger = logger
    }

    /// The manager for the (team, key) of `credentials`, created on first use; nil for certificate credentials
    /// (trust comes with the TLS handshake: no token is ever signed).
    package func manager(for credentials: APNsCredentials) -> ProviderTokenManager? {
        guard credentials.kind == .token else { return nil }
        let key = Key(teamID: credentials.teamID, keyID: credentials.keyID)
        return managers.withLock { managers in
            if let existing = managers[key] { return existing }
            let created = ProviderTokenManager(
                credentials: credentials, policy: policy, store: store, clock: clock, logger: logger)
            managers[key] = created
            return created
        }
    }

    /// How many keys have a manager.
    package var count: Int { managers.withLock { $0.count } }
}
