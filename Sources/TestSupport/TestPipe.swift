import Foundation
import Locking

/// A pipe for a test that hands a writer (a log sink) a file descriptor and reads back what it wrote.
package func makePipe() throws -> (read: Int32, write: Int32) {
    var fds: [Int32] = [0, 0]
    guard pipe(&fds) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
    return (fds[0], fds[1])
}

/// The text read from `fd` until end of file (every write end closed) or, with `waiting: false`, only what it holds
/// now: the descriptor is switched to non-blocking first.
package func readPipe(_ fd: Int32, waiting: Bool = true) -> String {
    if !waiting { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    var data = [UInt8]()
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = read(fd, &buffer, buffer.count)
        if n <= 0 { break }
        data += buffer[0..<n]
    }
    return String(decoding: data, as: UTF8.self)
}

/// Starts a thread that reads `fd` until end of file, so that a writer never blocks on a full pipe (64 KiB); the
/// function returned waits for the end of file and gives the text.
package func readPipeInBackground(_ fd: Int32) -> @Sendable () -> String {
    let text = Locked("")
    let finished = DispatchSemaphore(value: 0)
    Thread {
        let read = readPipe(fd)
        text.withLock { $0 = read }
        finished.signal()
    }.start()
    return {
        finished.wait()
        return text.withLock { $0 }
    }
}
