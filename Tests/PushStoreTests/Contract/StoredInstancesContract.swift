import Foundation
import XCTest

import PushStore

/// Run-time instances: every applied change raises the set's version by one, in its transaction with its audit
/// entry; a refused change (a taken id, an unknown one, a stale version) writes nothing, its entry included; a
/// deleted instance leaves the live set but the version never goes back, and its id can be used again.
final class StoredInstancesContract: StoreContract {
    let at = Date(millisecondsSince1970: 1_800_000_000_000)
    let id = "5b1c0d8e-7a2f-4e61-9c3d-0f4a2b6e8d17"

    func entry(_ action: String) -> AuditEntry {
        AuditEntry(at: at, instanceID: id, actor: "admin:ops", source: "127.0.0.1", action: action, target: id,
                   requestID: "req-\(action)")
    }

    func testEachAppliedChangeRaisesTheVersionOnceAndARefusedOneWritesNothing() async throws {
        let store = try await openStore()
        let empty = try await store.storedInstances()
        XCTAssertEqual(empty.version, 0)
        XCTAssertEqual(empty.instances, [])

        let created = try await store.changeInstance(.create(id: id.uppercased(), sealedDefinition: "sealed-1"),
                                                     at: at, audit: entry("instance.create"))
        XCTAssertEqual(created, .applied(version: 1))
        let taken = try await store.changeInstance(.create(id: id, sealedDefinition: "other"), at: at,
                                                   audit: entry("instance.create"))
        XCTAssertEqual(taken, .exists)
        let stale = try await store.changeInstance(.update(id: id, sealedDefinition: "sealed-x", expectedVersion: 7),
                                                   at: at, audit: entry("instance.update"))
        XCTAssertEqual(stale, .versionMismatch(current: 1))
        let updated = try await store.changeInstance(.update(id: id, sealedDefinition: "sealed-2", expectedVersion: 1),
                                                     at: at.addingTimeInterval(1), audit: entry("instance.update"))
        XCTAssertEqual(updated, .applied(version: 2))
        let unknown = try await store.changeInstance(.delete(id: "00000000-0000-4000-8000-000000000000",
                                                             expectedVersion: nil), at: at, audit: entry("instance.delete"))
        XCTAssertEqual(unknown, .notFound)

        let (version, rows) = try await store.storedInstances()
        XCTAssertEqual(version, 2)
        XCTAssertEqual(rows.map(\.id), [id], "ids are kept lower-cased")
        XCTAssertEqual(rows.first?.sealedDefinition, "sealed-2")
        XCTAssertEqual(rows.first?.version, 2)
        XCTAssertEqual(rows.first?.createdAt, at)
        XCTAssertEqual(rows.first?.updatedAt, at.addingTimeInterval(1))
        let versionAlone = try await store.storedInstancesVersion()
        XCTAssertEqual(versionAlone, 2)
        let audited = try await store.auditEntries(instanceID: nil, action: nil, after: 0, limit: 100)
        XCTAssertEqual(audited.map(\.action), ["instance.create", "instance.update"],
                       "only applied changes write their entry")
    }

    func testADeletedInstanceLeavesTheSetButTheVersionNeverGoesBackAndItsIdCanBeUsedAgain() async throws {
        let store = try await openStore()
        _ = try await store.changeInstance(.create(id: id, sealedDefinition: "one"), at: at, audit: nil)
        let deleted = try await store.changeInstance(.delete(id: id, expectedVersion: 1), at: at, audit: entry("instance.delete"))
        XCTAssertEqual(deleted, .applied(version: 2))
        let afterDelete = try await store.storedInstances()
        XCTAssertEqual(afterDelete.version, 2)
        XCTAssertEqual(afterDelete.instances, [])
        let updateGone = try await store.changeInstance(.update(id: id, sealedDefinition: "x", expectedVersion: nil),
                                                        at: at, audit: nil)
        XCTAssertEqual(updateGone, .notFound)
        let again = try await store.changeInstance(.create(id: id, sealedDefinition: "two"), at: at, audit: nil)
        XCTAssertEqual(again, .applied(version: 3))
        let (version, rows) = try await store.storedInstances()
        XCTAssertEqual(version, 3)
        XCTAssertEqual(rows.map(\.sealedDefinition), ["two"])
    }
}
