import BeamsModel
import Foundation
import PushStore
import XCTest

@testable import PushServer
@testable import SQLiteStore

/// docs/SECURITY.md "Disk": the most one client address can add to the database in an hour under the default
/// limits. The bytes a row costs are measured here on SQLite at the largest sizes the device API accepts, and the
/// bound is recomputed from `ServerConfig` defaults, so a change to either that breaks the documented figure fails.
final class DiskGrowthBoundTests: XCTestCase {
    /// The figures docs/SECURITY.md states (bytes per stored row, worst case).
    static let documentedBytesPerDevice = 14_000
    static let documentedBytesPerInterestName = 600
    static let documentedBytesPerSubscription = 40
    /// docs/SECURITY.md: at most this many bytes from one address in its first hour under the default limits.
    static let documentedBytesPerAddressHour: Int64 = 2_800_000_000

    /// Upper bound: each kind of row can be no more than its per-instance cap and no more than all of the
    /// address's tokens for the hour could buy (a new device costs 1 token; a `PUT …/interests` 1 per 10 elements,
    /// so at most 5000 names or subscriptions per 500 tokens), nor, for names and subscriptions, more than the
    /// address's interest budget for the hour (`ipInterestsPerSecond` on a bucket of 5,000).
    static func worstBytesPerAddressHour(_ limits: ServerConfig.Limits, device: Int, name: Int, subscription: Int)
        -> Int64
    {
        let tokens = Int64(limits.ipBurst) + 3600 * Int64(limits.ipRequestsPerSecond)
        let perPut = Int64(DeviceAPI.maxInterestsPerDevice)
        let putCost = Int64(1 + DeviceAPI.interestsCost(elements: Int(perPut), burst: limits.ipBurst))
        // Smaller PUTs buy elements at the same rate; the remainder tokens buy `interestsPerRequestCost` each.
        let bought = tokens / putCost * perPut + (tokens % putCost) * Int64(DeviceAPI.interestsPerRequestCost)
        let budget =
            limits.ipInterestsPerSecond > 0
            ? Int64(Limiters.interestBurst) + 3600 * Int64(limits.ipInterestsPerSecond) : Int64.max
        let elements = min(bought, budget)
        let devices = min(Int64(limits.maxDevicesPerInstance), tokens)
        let names = min(Int64(limits.maxInterestsPerInstance), elements)
        let subscriptions = min(Int64(limits.maxSubscriptionsPerInstance), elements)
        return devices * Int64(device) + names * Int64(name) + subscriptions * Int64(subscription)
    }

    func testOneAddressAddsAtMostTheDocumentedBytesPerHourUnderTheDefaults() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("disk-bound-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let store = try await SQLitePushStore.open(.init(path: directory.appendingPathComponent("push.sqlite").path))
        let instance = String(repeating: "f", count: 36)
        func bytes() async throws -> Int {
            try await store.read { connection in
                let pages = try connection.first("PRAGMA page_count") { $0.int64(0) } ?? 0
                let free = try connection.first("PRAGMA freelist_count") { $0.int64(0) } ?? 0
                let size = try connection.first("PRAGMA page_size") { $0.int64(0) } ?? 0
                return Int((pages - free) * size)
            }
        }
        // Devices: the longest token (4096 bytes, FCM) and metadata (4 KiB) the device API takes.
        let metadata = #"{"m":""# + String(repeating: "x", count: 4096 - 8) + #""}"#
        let deviceCount = 300
        let empty = try await bytes()
        var ids: [String] = []
        for n in 0..<deviceCount {
            let token = String(format: "%08d", n) + String(repeating: "t", count: DeviceToken.maxFCMTokenBytes - 8)
            let registration = DeviceRegistration(
                instanceID: instance, platform: .fcm, token: token,
                bundleID: "com.example.app", metadata: metadata)
            ids.append(try await store.registerDevice(registration).device.id)
        }
        let afterDevices = try await bytes()
        // Distinct 164-byte names, one follower each: 25 per device.
        let namesPerDevice = 25
        for (n, id) in ids.enumerated() {
            let names = (0..<namesPerDevice).map {
                String(format: "%06d-%03d-", n, $0) + String(repeating: "n", count: 164 - 11)
            }
            _ = try await store.setInterests(instanceID: instance, deviceID: id, interests: names)
        }
        let afterNames = try await bytes()
        // Subscriptions to names that exist already: every device follows 25 of device 0's names too.
        let shared = (0..<namesPerDevice).map {
            String(format: "%06d-%03d-", 0, $0) + String(repeating: "n", count: 164 - 11)
        }
        for (n, id) in ids.enumerated() where n > 0 {
            let own = (0..<namesPerDevice).map {
                String(format: "%06d-%03d-", n, $0) + String(repeating: "n", count: 164 - 11)
            }
            _ = try await store.setInterests(instanceID: instance, deviceID: id, interests: own + shared)
        }
        let afterSubscriptions = try await bytes()
        try await store.close()

        let perDevice = (afterDevices - empty) / deviceCount
        let perName = (afterNames - afterDevices) / (deviceCount * namesPerDevice)
        let perSubscription = (afterSubscriptions - afterNames) / ((deviceCount - 1) * namesPerDevice)
        print("bytes per device \(perDevice), per interest name \(perName), per subscription \(perSubscription)")
        XCTAssertLessThanOrEqual(perDevice, Self.documentedBytesPerDevice)
        XCTAssertLessThanOrEqual(perName, Self.documentedBytesPerInterestName)
        XCTAssertLessThanOrEqual(perSubscription, Self.documentedBytesPerSubscription)

        let defaults = ServerConfig.Limits()
        let bound = Self.worstBytesPerAddressHour(
            defaults, device: Self.documentedBytesPerDevice,
            name: Self.documentedBytesPerInterestName,
            subscription: Self.documentedBytesPerSubscription)
        print("worst bytes per address-hour under the defaults: \(bound)")
        XCTAssertLessThanOrEqual(bound, Self.documentedBytesPerAddressHour)
        // The address's interest budget binds first: 365,000 names in the hour, under the per-instance caps. Without
        // it the request budget alone bought 1.8 million elements, which only the caps (1,000,000 names) bounded.
        var uncapped = defaults
        uncapped.maxInterestsPerInstance = .max
        uncapped.maxSubscriptionsPerInstance = .max
        func worst(_ limits: ServerConfig.Limits) -> Int64 {
            Self.worstBytesPerAddressHour(
                limits, device: Self.documentedBytesPerDevice, name: Self.documentedBytesPerInterestName,
                subscription: Self.documentedBytesPerSubscription)
        }
        XCTAssertEqual(worst(uncapped), bound)
        var unbudgeted = uncapped
        unbudgeted.ipInterestsPerSecond = 0
        XCTAssertGreaterThan(worst(unbudgeted), bound)
    }
}
