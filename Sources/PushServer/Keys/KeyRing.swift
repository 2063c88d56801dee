import Clocks
import ConfigModel
import Foundation
import JWTSigner
import Locking
import Logging
import PushStore

/// Every instance's keys as this node sees them: the store's rows, read at most once a `freshness` period per
/// instance (a second by default), so a key created, rolled or revoked on any node takes effect everywhere within
/// about that long, without a restart or a notification. Also writes `lastUsedAt`, at most once a minute per key and
/// node, from a task of its own (never on the request's path).
package final class KeyRing: Sendable {
    /// One instance's keys, as last read.
    struct Snapshot: Sendable {
        var keys: [APIKeyRecord]
        /// The accepted Beams secrets, the current one first.
        var beamsSecrets: [AcceptedBeamsSecret]
        /// `MonotonicClock.now()` when the read began: the rows are at least that recent.
        var readAt: UInt64
    }

    /// A store failure while reading keys: nothing was authenticated.
    package struct Unavailable: Error, Sendable {
        package var underlying: String
    }

    let store: any APIKeyStore
    /// Seals rolled Beams secrets (`keys.encryptionKey`); nil when none is configured.
    let seal: SecretSeal?
    let logger: Logger
    let now: @Sendable () -> Date
    let freshness: Duration
    private let snapshots = Locked<[String: Snapshot]>([:])
    /// Instances whose snapshot a request is refreshing: the others keep using the stale one meanwhile.
    private let refreshing = Locked<Set<String>>([])
    /// Stored Beams secrets that did not open, each logged once (the snapshot is re-read every second).
    private let unopenable = Locked<Set<String>>([])
    /// When this node last wrote each key's `lastUsedAt` ("instance key").
    private let usesWritten = Locked<[String: Date]>([:])
    static let useWriteInterval: TimeInterval = 60
    /// A stale snapshot is still served while another request refreshes it, up to this old.
    static let staleLimit = Duration.seconds(30)

    package init(
        store: any APIKeyStore, seal: SecretSeal?, logger: Logger, now: @escaping @Sendable () -> Date,
        freshness: Duration = .seconds(1)
    ) {
        self.store = store
        self.seal = seal
        self.logger = logger
        self.now = now
        self.freshness = freshness
    }

    // MARK: Reading

    /// The instance's keys and accepted Beams secrets, at most `freshness` old (or, while another request refreshes
    /// them, at most `staleLimit`). - Throws: `Unavailable` when the store cannot be read and nothing recent is held.
    func snapshot(_ instance: InstanceConfig) async throws(Unavailable) -> Snapshot {
        let key = instance.id.lowercased()
        let held = snapshots.withLock { $0[key] }
        if let held, MonotonicClock.elapsed(since: held.readAt) < freshness { return held }
        if let held, MonotonicClock.elapsed(since: held.readAt) < Self.staleLimit,
            !refreshing.withLock({ $0.insert(key).inserted })
        {
            return held
        }
        refreshing.withLock { _ = $0.insert(key) }
        defer { refreshing.withLock { _ = $0.remove(key) } }
        do {
            return try await reload(instance)
        } catch {
            // An outage keeps the keys last read working (nothing can be changed meanwhile either).
            guard let held else { throw error }
            logger.debug(
                "Keys not re-read, the last ones are used", ["instance": instance.id, "error": error.underlying])
            return held
        }
    }

    /// Reads the instance's keys from the store now and keeps them, unless a read that began later is kept
    /// already: reads overlap (the start-up read, a request's refresh, a key change's), and one that began before a
    /// key was created must not replace one that saw it (the new key was refused with 401 for up to a second, in CI).
    /// - Returns: the snapshot kept.
    @discardableResult
    func reload(_ instance: InstanceConfig) async throws(Unavailable) -> Snapshot {
        let began = MonotonicClock.now()
        let rows: [APIKeyRecord]
        do {
            rows = try await store.apiKeys(instanceID: instance.id)
        } catch {
            throw Unavailable(underlying: "\(error)")
        }
        let read = Snapshot(keys: rows, beamsSecrets: beamsSecrets(instance, rows), readAt: began)
        return snapshots.withLock { held in
            let key = instance.id.lowercased()
            if let newer = held[key], newer.readAt > began { return newer }
            held[key] = read
            return read
        }
    }

    /// The snapshot held, however old: the import route's admission check runs before the body is read and cannot
    /// wait for the store.
    func heldSnapshot(_ instance: InstanceConfig) -> Snapshot? {
        snapshots.withLock { $0[instance.id.lowercased()] }
    }

    /// The Beams secrets accepted now, the current one first (user tokens verify against each).
    func beamsSecrets(_ instance: InstanceConfig) async throws(Unavailable) -> [AcceptedBeamsSecret] {
        try await snapshot(instance).beamsSecrets
    }

    private func beamsSecrets(_ instance: InstanceConfig, _ rows: [APIKeyRecord]) -> [AcceptedBeamsSecret] {
        let stored = rows.filter { $0.kind == .beams }
        var opened: [(record: APIKeyRecord, secret: String)] = []
        for row in stored where row.revokedAt == nil {
            if let secret = open(row) { opened.append((row, secret)) }
        }
        return BeamsSecrets.accepted(config: instance.secretKey, stored: opened, anyStored: !stored.isEmpty, now: now())
    }

    private func open(_ row: APIKeyRecord) -> String? {
        if let seal, let text = row.sealedSecret, let sealed = Data(base64Encoded: text),
            let plain = try? seal.open(Array(sealed), associatedData: Self.associatedData(row.instanceID, row.id))
        {
            return String(decoding: plain, as: UTF8.self)
        }
        if unopenable.withLock({ $0.insert("\(row.instanceID.lowercased()) \(row.id)").inserted }) {
            logger.error(
                seal == nil
                    ? "A rolled Beams secret is stored but keys.encryptionKey is not set: it is not accepted"
                    : "A stored Beams secret does not open with keys.encryptionKey (another key sealed it?): it is not accepted",
                ["instance": row.instanceID, "key": row.id])
        }
        return nil
    }

    static func associatedData(_ instanceID: String, _ keyID: String) -> [UInt8] {
        Array("push-server beams secret \(instanceID.lowercased()) \(keyID)".utf8)
    }

    /// Notes that `keyID` authenticated a request; writes `lastUsedAt` when this node last wrote it a minute ago
    /// or more, in a task of its own (a failed write is only logged: the time is informative).
    func noteUse(_ instance: InstanceConfig, keyID: String) {
        let at = now()
        let slot = "\(instance.id.lowercased()) \(keyID)"
        let due = usesWritten.withLock { written in
            if let last = written[slot], at.timeIntervalSince(last) < Self.useWriteInterval { return false }
            written[slot] = at
            return true
        }
        guard due else { return }
        let store = self.store
        let logger = self.logger
        let use = APIKeyUse(instanceID: instance.id, id: keyID, at: at)
        Task {
            do { try await store.recordAPIKeyUses([use]) } catch {
                logger.debug("Could not record a key's last use", ["key": keyID, "error": "\(error)"])
            }
        }
    }
}
