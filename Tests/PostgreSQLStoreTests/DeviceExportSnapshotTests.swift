import Foundation
import Locking
import PostgreSQLStore
import PushStore
import XCTest

/// An export reads one snapshot (REPEATABLE READ): devices registered or deleted while it runs (between its pages)
/// do not change what it writes.
final class PostgreSQLDeviceExportSnapshotTests: PostgreSQLTestCase {
    func testDevicesWrittenDuringAnExportAreNotInIt() async throws {
        let store = try await openNode()
        var registered: [String] = []
        for n in 1...3 {
            registered.append(
                try await store.registerDevice(DeviceRegistration(instanceID: instance, token: token(n))).device.id)
        }
        let ids = registered
        let (instance, doomed, fourth) = (self.instance, ids[2], token(4))
        let exported = Locked<[String]>([])
        let changed = Locked(false)
        try await store.exportDevices(instanceID: instance, after: 0, pageSize: 1) { page in
            exported.withLock { $0 += page.map(\.record.device.id) }
            if !changed.withLock({ $0 }) {
                changed.withLock { $0 = true }
                let done = DispatchSemaphore(value: 0)
                Task {
                    _ = try? await store.registerDevice(DeviceRegistration(instanceID: instance, token: fourth))
                    _ = try? await store.deleteDevice(instanceID: instance, id: doomed)
                    done.signal()
                }
                done.wait()
            }
            return true
        }
        XCTAssertEqual(exported.withLock { $0 }, ids, "the snapshot of the first read: device 3 in, device 4 out")
        try await store.close()
    }
}
