import Foundation
import PushStore
import Testing

/// The audit log: an entry is written by the store call that makes the change, in its transaction, and only when
/// the change is made; entries read per instance in order, paged by `seq`; the retention prune removes old ones.
final class AuditLogContract: StoreContract {
    let at = Date(millisecondsSince1970: 1_800_000_000_000)

    func key(_ id: String) -> APIKeyRecord {
        APIKeyRecord(
            instanceID: instance, id: id, kind: .scoped, label: "backend", scopes: ["publish"],
            secretDigest: String(repeating: "ab", count: 32), createdAt: at)
    }

    func entry(_ action: String, _ target: String, instance: String? = nil, at: Date? = nil) -> AuditEntry {
        AuditEntry(
            at: at ?? self.at, instanceID: instance ?? self.instance, actor: "psk-admin0001",
            source: "127.0.0.1", action: action, target: target, requestID: "req-\(action)-\(target)")
    }

    @Test(arguments: ContractBackend.selected)
    func testAnEntryIsWrittenWithTheChangeAndAFailedChangeWritesNone(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let created = try await store.insertAPIKey(key("aaaaaaaaaaaa"), audit: entry("key.create", "aaaaaaaaaaaa"))
        #expect(created)
        // A taken id stores nothing, so its entry is not written either.
        let duplicate = try await store.insertAPIKey(key("aaaaaaaaaaaa"), audit: entry("key.create", "again"))
        #expect(!duplicate)
        let rolled = try await store.rollAPIKey(
            instanceID: instance, keyID: "aaaaaaaaaaaa", retireAt: at,
            replacement: key("bbbbbbbbbbbb"),
            audit: entry("key.roll", "aaaaaaaaaaaa"))
        #expect(rolled)
        let rolledUnknown = try await store.rollAPIKey(
            instanceID: instance, keyID: "zzzzzzzzzzzz", retireAt: at,
            replacement: key("cccccccccccc"),
            audit: entry("key.roll", "zzzzzzzzzzzz"))
        #expect(!rolledUnknown)
        let revoked = try await store.revokeAPIKey(
            instanceID: instance, keyID: "bbbbbbbbbbbb", at: at,
            audit: entry("key.revoke", "bbbbbbbbbbbb"))
        #expect(revoked)
        let revokedUnknown = try await store.revokeAPIKey(
            instanceID: instance, keyID: "zzzzzzzzzzzz", at: at,
            audit: entry("key.revoke", "zzzzzzzzzzzz"))
        #expect(!revokedUnknown)
        try await store.appendAudit(entry("key.create", "denied", instance: "other"))
        let entries = try await store.auditEntries(instanceID: instance, after: 0, limit: 100)
        #expect(entries.map(\.action) == ["key.create", "key.roll", "key.revoke"])
        #expect(entries.map(\.target) == ["aaaaaaaaaaaa", "aaaaaaaaaaaa", "bbbbbbbbbbbb"])
        var expected = entry("key.revoke", "bbbbbbbbbbbb")
        expected.seq = entries[2].seq
        #expect(entries[2] == expected)
        #expect(entries[0].seq < entries[1].seq && entries[1].seq < entries[2].seq)
        // Paged by seq.
        let page = try await store.auditEntries(instanceID: instance, after: entries[0].seq, limit: 1)
        #expect(page.map(\.seq) == [entries[1].seq])
        let others = try await store.auditEntries(instanceID: "other", after: 0, limit: 100)
        #expect(others.map(\.target) == ["denied"])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testRetentionPruneRemovesOnlyEntriesOlderThanTheCutoffUpToTheLimit(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        for day in 0..<3 {
            try await store.appendAudit(entry("key.create", "old\(day)", at: at.addingTimeInterval(Double(day))))
        }
        try await store.appendAudit(entry("key.create", "new", at: at.addingTimeInterval(86_400)))
        let cutoff = at.addingTimeInterval(3600)
        let first = try await store.pruneAudit(before: cutoff, limit: 2)
        #expect(first == 2)
        let second = try await store.pruneAudit(before: cutoff, limit: 2)
        #expect(second == 1)
        let left = try await store.auditEntries(instanceID: instance, after: 0, limit: 100)
        #expect(left.map(\.target) == ["new"])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testAUserDeletionAndACancelWriteTheirEntryAndACancelOfNothingWritesNone(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        let device = try await register(store, 1)
        _ = try await store.setUser(instanceID: instance, deviceID: device.id, userID: "alice", maxDevicesPerUser: 10)
        let removed = try await store.deleteUser(
            instanceID: instance, userID: "alice",
            audit: entry("user.delete", "alice"))
        #expect(removed == 1)
        _ = try await store.enqueuePublish(
            PublishJob(
                instanceID: instance, publishID: "later", kind: .interests, targets: ["news"], payload: Data("p".utf8),
                createdAt: clock.now, notBefore: clock.now.addingTimeInterval(60)))
        let cancelled = try await store.cancelPublish(
            instanceID: instance, publishID: "later", now: clock.now,
            audit: entry("publish.cancel", "later"))
        guard case .cancelled? = cancelled else {
            Issue.record("expected .cancelled, got \(String(describing: cancelled))"); return
        }
        let unknown = try await store.cancelPublish(
            instanceID: instance, publishID: "nothing", now: clock.now,
            audit: entry("publish.cancel", "nothing"))
        #expect(unknown == nil)
        let again = try await store.cancelPublish(
            instanceID: instance, publishID: "later", now: clock.now,
            audit: entry("publish.cancel", "again"))
        guard case .alreadyEnded? = again else { Issue.record("expected .alreadyEnded"); return }
        let entries = try await store.auditEntries(instanceID: instance, after: 0, limit: 100)
        #expect(entries.map(\.target) == ["alice", "later"])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testTheServerWideLogListsEveryInstanceInOrderAndFiltersByAction(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        try await store.appendAudit(entry("key.create", "a1"))
        try await store.appendAudit(entry("key.create", "b1", instance: "other"))
        try await store.appendAudit(entry("user.delete", "a2"))
        try await store.appendAudit(entry("key.create", "b2", instance: "other"))
        let all = try await store.auditEntries(instanceID: nil, action: nil, after: 0, limit: 100)
        #expect(all.map(\.target) == ["a1", "b1", "a2", "b2"])
        let created = try await store.auditEntries(instanceID: nil, action: "key.create", after: 0, limit: 100)
        #expect(created.map(\.target) == ["a1", "b1", "b2"])
        let page = try await store.auditEntries(instanceID: nil, action: "key.create", after: created[0].seq, limit: 1)
        #expect(page.map(\.target) == ["b1"])
        let mine = try await store.auditEntries(instanceID: instance, action: "key.create", after: 0, limit: 100)
        #expect(mine.map(\.target) == ["a1"])
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testAnImportBatchWritesItsEntryInItsTransactionAndADryRunWritesNone(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        guard let transfer = store as? any DeviceTransfer else {
            try await store.close()
            try Test.cancel("\(backend) has no bulk import (DeviceTransfer)")
        }
        func record(_ token: String) -> DeviceRecord {
            DeviceRecord(
                device: Device(
                    id: "", instanceID: instance, platform: .apns, token: token, environment: .production,
                    environmentDeclared: false, bundleID: nil, metadata: "{}", userID: nil, createdAt: at,
                    lastRegisteredAt: at, lastResult: nil, invalidatedAt: nil), interests: [])
        }
        let base = entry("devices.import", instance)
        let audit: @Sendable ([DeviceImportOutcome]) -> AuditEntry = { outcomes in
            var made = base
            made.outcome = "created \(outcomes.filter { $0 == .created }.count)"
            return made
        }
        let dry = try await transfer.importDevices(
            [record("aa01")], into: instance, caps: .unlimited, dryRun: true,
            audit: audit)
        #expect(dry == [.created])
        let written = try await transfer.importDevices(
            [record("aa01"), record("aa02")], into: instance,
            caps: .unlimited, dryRun: false, audit: audit)
        #expect(written == [.created, .created])
        let entries = try await store.auditEntries(instanceID: instance, after: 0, limit: 100)
        #expect(entries.map(\.outcome) == ["created 2"], "the entry counts the batch's outcomes; a dry run writes none")
        try await store.close()
    }
}
