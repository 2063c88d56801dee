import Foundation
import Glibc

/// A local HTTP receiver on 127.0.0.1 for the client tests: real sockets, one thread per connection, and a
/// scripted answer. Records every request and the connections it accepted.
///
/// @unchecked Sendable: the recorded state is only touched while holding `condition`; the listening socket is
/// set once in `init`.
final class TestReceiver: @unchecked Sendable {
    enum Answer: Sendable {
        /// Raw response bytes, then close.
        case respond(String)
        /// Read the request, answer nothing, wait for the client to give up.
        case silent
        /// A response without a length, whose body never ends (until the client closes).
        case endless
    }

    struct Request: Sendable {
        var head: String
        var body: [UInt8]

        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                if line[..<colon].lowercased() == name.lowercased() {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    let port: Int
    private let listener: Int32
    private let answer: Answer
    private let condition = NSCondition()
    private var requests: [Request] = []
    private var acceptedCount = 0

    init(_ answer: Answer) throws {
        self.answer = answer
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            Glibc.close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Stops accepting: wakes the blocked `accept`, whose thread then closes the socket. Closed here instead, its
    /// descriptor number could go to the next test's listener while this thread was still about to call `accept`
    /// on it, and this receiver would answer that test's request (seen: a 204 where an endless answer was due).
    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
    }

    func url(_ path: String = "/hook", credentials: String = "") -> String {
        "http://\(credentials)127.0.0.1:\(port)\(path)"
    }

    var accepted: Int {
        condition.lock()
        defer { condition.unlock() }
        return acceptedCount
    }

    var received: [Request] {
        condition.lock()
        defer { condition.unlock() }
        return requests
    }

    /// Waits (up to `timeout` seconds) until `count` requests arrived.
    func waitForRequests(_ count: Int, timeout: TimeInterval = 10) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while requests.count < count {
            if !condition.wait(until: deadline) { return requests.count >= count }
        }
        return true
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                Glibc.close(listener)
                return
            }
            condition.lock()
            acceptedCount += 1
            condition.unlock()
            let thread = Thread { [self] in serve(client) }
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        defer { Glibc.close(fd) }
        guard let request = readRequest(fd) else { return }
        condition.lock()
        requests.append(request)
        condition.broadcast()
        condition.unlock()
        switch answer {
        case .respond(let text):
            _ = write(fd, Array(text.utf8))
        case .silent:
            var byte: UInt8 = 0
            _ = recv(fd, &byte, 1, 0)  // returns when the client closes
        case .endless:
            guard write(fd, Array("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n".utf8)) else { return }
            let chunk = [UInt8](repeating: 0x61, count: 16_384)
            while write(fd, chunk) {}
        }
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    private func readRequest(_ fd: Int32) -> Request? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        while true {
            if let end = data.firstRange(of: separator) {
                let head = String(decoding: data[..<end.lowerBound], as: UTF8.self)
                var request = Request(head: head, body: [])
                let length = Int(request.header("Content-Length") ?? "0") ?? 0
                var body = Array(data[end.upperBound...])
                while body.count < length {
                    let count = recv(fd, &buffer, buffer.count, 0)
                    if count <= 0 { return nil }
                    body += buffer[0..<count]
                }
                request.body = body
                return request
            }
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { return nil }
            data += buffer[0..<count]
            if data.count > 1 << 20 { return nil }
        }
    }
}
