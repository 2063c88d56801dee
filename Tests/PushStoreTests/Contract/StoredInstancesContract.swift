import Foundation
import PushStore
import Testing

/// Run-time instances: every applied change raises the set's version by one, in its transaction with its audit
/// entry; a refused change (a taken id, an unknown one, a stale version) writes nothing, its entry included; a
/// deleted instance leaves the live set but the version never goes back, and its id can be used again.
final class StoredInstancesContract: StoreContract {
    let at = Date(millisecondsSince1970: 1_800_000_000_000)
    let id = "5b1c0d8e-7a2f-4e61-9c3d-0f4a2b6e8d17"

    func entry(_ action: String) -> AuditEntry {
        AuditEntry(
            at: at, instanceID: id, actor: "admin:ops", source: "127.0.0.1", action: action, target: id,
            requestID: "req-\(action)")
    }

    @Test(arguments: ContractBackend.selected)
    func testEachAppliedChangeRaisesTheVersionOnceAndARefusedOneWritesNothing(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let empty = try await store.storedInstances()
        #expect(empty.version == 0)
        #expect(empty.instances == [])

        let created = try await store.changeInstance(
            .create(id: id.uppercased(), sealedDefinition: "sealed-1"),
            at: at, audit: entry("instance.create"))
        #expect(created == .applied(version: 1))
        let taken = try await store.changeInstance(
            .create(id: id, sealedDefinition: "other"), at: at,
            audit: entry("instance.create"))
        #expect(taken == .exists)
        let stale = try await store.changeInstance(
            .update(id: id, sealedDefinition: "sealed-x", expectedVersion: 7),
            at: at, audit: entry("instance.update"))
        #expect(stale == .versionMismatch(current: 1))
        let updated = try await store.changeInstance(
            .update(id: id, sealedDefinition: "sealed-2", expectedVersion: 1),
            at: at.addingTimeInterval(1), audit: entry("instance.update"))
        #expect(updated == .applied(version: 2))
        let unknown = try await store.changeInstance(
            .delete(
                id: "00000000-0000-4000-8000-000000000000",
                expectedVersion: nil), at: at, audit: entry("instance.delete"))
        #expect(unknown == .notFound)

        let (version, rows) = try await store.storedInstances()
        #expect(version == 2)
        #expect(rows.map(\.id) == [id], "ids are kept lower-cased")
        #expect(rows.first?.sealedDefinition == "sealed-2")
        #expect(rows.first?.version == 2)
        #expect(rows.first?.createdAt == at)
        #expect(rows.first?.updatedAt == at.addingTimeInterval(1))
        let versionAlone = try await store.storedInstancesVersion()
        #expect(versionAlone == 2)
        let audited = try await store.auditEntries(instanceID: nil, action: nil, after: 0, limit: 100)
        #expect(
            audited.map(\.action) == ["instance.create", "instance.update"], "only applied changes write their entry")
    }

    @Test(arguments: ContractBackend.selected)
    func testADeletedInstanceLeavesTheSetButTheVersionNeverGoesBackAndItsIdCanBeUsedAgain(_ backend: ContractBackend)
        async throws
    {
        let store = try await openStore(backend)
        _ = try await store.changeInstance(.create(id: id, sealedDefinition: "one"), at: at, audit: nil)
        let deleted = try await store.changeInstance(
            .delete(id: id, expectedVersion: 1), at: at, audit: entry("instance.delete"))
        #expect(deleted == .applied(version: 2))
        let afterDelete = try await store.storedInstances()
        #expect(afterDelete.version == 2)
        #expect(afterDelete.instances == [])
        let updateGone = try await store.changeInstance(
            .update(id: id, sealedDefinition: "x", expectedVersion: nil),
            at: at, audit: nil)
        #expect(updateGone == .notFound)
        let again = try await store.changeInstance(.create(id: id, sealedDefinition: "two"), at: at, audit: nil)
        #expect(again == .applied(version: 3))
        let (version, rows) = try await store.storedInstances()
        #expect(version == 3)
        #expect(rows.map(\.sealedDefinition) == ["two"])
    }
}
