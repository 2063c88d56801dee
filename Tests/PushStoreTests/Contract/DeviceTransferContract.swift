import Foundation
import Locking
import PushStore
import Testing

/// Bulk export (`DeviceTransfer`), on the backends that have it: an export reads one snapshot (on PostgreSQL a
/// REPEATABLE READ transaction), so devices registered or deleted while it runs (between its pages) do not change
/// what it writes.
final class DeviceTransferContract: StoreContract {
    @Test(arguments: ContractBackend.selected)
    func testDevicesWrittenDuringAnExportAreNotInIt(_ backend: ContractBackend) async throws {
        let store = try await openStore(backend)
        guard let transfer = store as? any DeviceTransfer else {
            try await store.close()
            try Test.cancel("\(backend) has no bulk export (DeviceTransfer)")
        }
        var registered: [String] = []
        for n in 1...3 {
            registered.append(
                try await store.registerDevice(DeviceRegistration(instanceID: instance, token: token(n))).device.id)
        }
        let ids = registered
        let (instance, doomed, fourth) = (self.instance, ids[2], token(4))
        let exported = Locked<[String]>([])
        let changed = Locked(false)
        try await transfer.exportDevices(instanceID: instance, after: 0, pageSize: 1) { page in
            exported.withLock { $0 += page.map(\.record.device.id) }
            if !changed.withLock({ $0 }) {
                changed.withLock { $0 = true }
                // On the export's own thread: block it while another connection changes the table.
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
        #expect(exported.withLock { $0 } == ids, "the snapshot of the first read: device 3 in, device 4 out")
        let after = Locked(0)
        try await transfer.exportDevices(instanceID: instance, after: 0, pageSize: 10) { page in
            after.withLock { $0 += page.count }
            return true
        }
        #expect(after.withLock { $0 } == 3, "a new export sees the changes")
        try await store.close()
    }
}
