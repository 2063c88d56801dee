import Foundation
import PushStore
import Testing

final class TargetStreamContract: StoreContract {
    func job(_ kind: PublishKind, _ targets: [String]) -> PublishJob {
        PublishJob(
            instanceID: instance, publishID: "p", kind: kind, targets: targets, payload: Data(), createdAt: clock.now)
    }

    /// Reads every page and fails on any repeat or out-of-order target.
    func drain(_ store: any PushStorage, _ job: PublishJob, pageSize: Int, after start: Int64 = 0) async throws
        -> [Target]
    {
        var all: [Target] = []
        var cursor = start
        var pages = 0
        while true {
            let page = try await store.targets(for: job, after: cursor, limit: pageSize)
            #expect(page.targets.count <= pageSize)
            #expect(page.cursor >= cursor)
            if let first = page.targets.first, let previous = all.last { #expect(first.ref > previous.ref) }
            all += page.targets
            cursor = page.cursor
            pages += 1
            if page.isLast { break }
            #expect(pages < 10_000, "paging does not terminate")
        }
        let refs = all.map(\.ref)
        #expect(refs == refs.sorted())
        #expect(Set(refs).count == refs.count, "a device was delivered twice")
        return all
    }

    @Test(arguments: ContractBackend.selected)
    func testInterestUnionVisitsEachFollowerOnceAcrossPages(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        var devices: [Device] = []
        for n in 0..<40 { devices.append(try await register(store, n)) }
        var expected: Set<String> = []
        for (n, device) in devices.enumerated() {
            var follows: [String] = []
            if n % 2 == 0 { follows.append("even") }
            if n % 3 == 0 { follows.append("three") }
            if n >= 30 { follows.append("tail") }
            if n == 5 { follows.append("unrelated") }
            if !follows.filter({ $0 != "unrelated" }).isEmpty { expected.insert(device.token) }
            _ = try await store.setInterests(instanceID: instance, deviceID: device.id, interests: follows)
        }
        let job = job(.interests, ["even", "three", "tail", "missing", "even"])
        for pageSize in [1, 3, 7, 100] {
            let targets = try await drain(store, job, pageSize: pageSize)
            #expect(Set(targets.map(\.token)) == expected, "page size \(pageSize)")
            #expect(targets.count == expected.count, "page size \(pageSize)")
        }
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testTargetsCarryDeviceFieldsAndSkipInvalidatedDevices(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let a = try await register(store, 1, declared: .sandbox)
        let b = try await register(store, 2)
        let c = try await register(store, 3)
        for device in [a, b, c] {
            _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: "news")
        }
        _ = try await store.setUser(instanceID: instance, deviceID: a.id, userID: "alice", maxDevicesPerUser: 100)
        let bRef = try await drain(store, job(.interests, ["news"]), pageSize: 10)[1].ref
        clock.advance(1)
        try await store.recordDeviceResults([
            DeviceResult(device: bRef, status: 400, reason: "BadDeviceToken", at: clock.now, effect: .badToken)
        ])
        let targets = try await drain(store, job(.interests, ["news"]), pageSize: 1)
        #expect(targets.map(\.deviceID) == [a.id, c.id])
        let first = targets[0]
        #expect(first.token == token(1))
        #expect(first.environment == .sandbox)
        #expect(first.environmentDeclared)
        #expect(first.userID == "alice")
        #expect(first.platform == .apns)
        #expect(first.lastRegisteredAt == a.lastRegisteredAt)
        let count = try await store.subscriberCount(instanceID: instance, interest: "news")
        #expect(count == 2)
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testResumingFromACursorReturnsOnlyLaterDevices(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        for n in 0..<10 {
            let device = try await register(store, n)
            _ = try await store.addInterest(instanceID: instance, deviceID: device.id, interest: n % 2 == 0 ? "a" : "b")
        }
        let all = try await drain(store, job(.interests, ["a", "b"]), pageSize: 100)
        #expect(all.count == 10)
        let rest = try await drain(store, job(.interests, ["a", "b"]), pageSize: 3, after: all[3].ref)
        #expect(rest == Array(all[4...]))
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUnknownInterestsGiveOneEmptyLastPage(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        let page = try await store.targets(for: job(.interests, ["nobody"]), after: 0, limit: 10)
        #expect(page == TargetPage(targets: [], cursor: 0, isLast: true))
        try await store.close()
    }

    @Test(arguments: ContractBackend.selected)
    func testUserTargetsAreEveryValidDeviceOfEachUser(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        var byUser: [String: [String]] = [:]
        for n in 0..<12 {
            let device = try await register(store, n)
            let user = ["u1", "u2", "u3", "nobody"][n % 4]
            if user != "nobody" {
                _ = try await store.setUser(
                    instanceID: instance, deviceID: device.id, userID: user, maxDevicesPerUser: 100)
                byUser[user, default: []].append(device.id)
            }
        }
        let targets = try await drain(store, job(.users, ["u1", "u3", "ghost"]), pageSize: 2)
        #expect(Set(targets.map(\.deviceID)) == Set(byUser["u1"]! + byUser["u3"]!))
        #expect(targets.allSatisfy { $0.userID == "u1" || $0.userID == "u3" })
        try await store.close()
    }
}
