import Foundation
import Locking
import PushStore

/// Writes a device file (docs/DATA-FORMAT.md) from one store snapshot: the header, a line per device, the end line.
/// Each page of devices is rendered and handed to `write` at once (it may block: that is the backpressure), so
/// memory stays at one page whatever the store holds.
struct DeviceExporter {
    let store: any DeviceTransfer
    /// The instance exported; nil: every instance.
    let instanceID: String?
    /// Resume behind this device.
    var after: DeviceExportCursor?
    /// Devices per page. Default 1,000.
    var pageSize = 1000
    /// Stop after this many devices (an admin API page); nil: all.
    var limit: Int?

    /// What an export wrote.
    struct Summary {
        var devices: Int
        /// The cursor of the last device written (resumes after it); nil when none was.
        var last: DeviceExportCursor?
        /// Stopped at `limit`: more devices may follow `last`.
        var more = false
    }

    /// - Parameters:
    ///   - write: takes each chunk of output, in order; called on the store's export thread.
    ///   - progress: devices written so far, after each page.
    func run(
        now: Date, write: @escaping @Sendable ([UInt8]) throws -> Void,
        progress: @escaping @Sendable (Int) -> Void = { _ in }
    ) async throws -> Summary {
        try write(DeviceDataFormat.header(instanceID: instanceID, after: after, exportedAt: now))
        let state = Locked(Summary(devices: 0, last: nil))
        let instanceID = self.instanceID
        let limit = self.limit
        let pageSize = limit.map { min($0, self.pageSize) } ?? self.pageSize
        try await store.exportDevices(instanceID: instanceID, after: after?.position ?? 0, pageSize: pageSize) { page in
            var out: [UInt8] = []
            out.reserveCapacity(page.count * 512)
            var last: DeviceExportCursor?
            for exported in page {
                let cursor = DeviceExportCursor(instanceID: instanceID, position: exported.position)
                out.append(contentsOf: DeviceDataFormat.deviceLine(exported.record, cursor: cursor))
                last = cursor
            }
            try write(out)
            let (count, more) = state.withLock { summary in
                summary.devices += page.count
                summary.last = last
                if let limit, summary.devices >= limit, page.count == pageSize { summary.more = true }
                return (summary.devices, summary.more)
            }
            progress(count)
            return !more
        }
        let summary = state.withLock { $0 }
        try write(DeviceDataFormat.end(devices: summary.devices, cursor: summary.last ?? after, more: summary.more))
        return summary
    }
}
