import Foundation
import PushServer
import XCTest

final class SystemdNotifierTests: XCTestCase {
    /// A datagram socket of our own standing in for systemd's notify socket.
    private final class NotifySocket {
        let fd: Int32
        let path: String
        init() throws {
            path =
                FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8))")
                .path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard rc == 0 else { throw POSIXError(.EADDRINUSE) }
            var timeout = timeval(tv_sec: 2, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }
        func receive() -> String? {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : nil
        }
        deinit {
            close(fd)
            unlink(path)
        }
    }

    func testSendsReadyStoppingAndWatchdogDatagrams() throws {
        let socket = try NotifySocket()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": socket.path, "WATCHDOG_USEC": "10000000"])
        XCTAssertTrue(notifier.isEnabled)
        XCTAssertEqual(notifier.watchdogInterval, .seconds(5))
        notifier.ready(status: "Serving")
        XCTAssertEqual(socket.receive(), "READY=1\nSTATUS=Serving")
        notifier.watchdog()
        XCTAssertEqual(socket.receive(), "WATCHDOG=1")
        notifier.stopping()
        XCTAssertEqual(socket.receive(), "STOPPING=1")
    }

    func testIsANoOpWithoutNotifySocket() {
        let notifier = SystemdNotifier(environment: [:])
        XCTAssertFalse(notifier.isEnabled)
        XCTAssertNil(notifier.watchdogInterval)
        XCTAssertFalse(notifier.send("READY=1"))
    }

    func testIgnoresWatchdogMeantForAnotherProcess() {
        let notifier = SystemdNotifier(environment: [
            "NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "1000", "WATCHDOG_PID": "1",
        ])
        XCTAssertNil(notifier.watchdogInterval)
    }
}
