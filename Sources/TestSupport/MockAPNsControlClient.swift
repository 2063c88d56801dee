import Foundation

/// A minimal blocking HTTP/1.1 client for the mock's control API: one connection per call, `Connection: close`,
/// the response read to EOF. Stateless, so it is safe from any thread.
struct MockAPNsControlClient: Sendable {
    let port: UInt16
    /// Upper bound for connect, send and each receive, so a wedged mock fails a test instead of hanging it.
    var timeoutSeconds: Int = 30

    /// Sends `method path` with an optional JSON body; returns the body of a 2xx answer or throws.
    func call(_ method: String, _ path: String, body: Data? = nil) throws(MockAPNsError) -> Data {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw .socket(operation: "socket", errno: errno) }
        defer { close(fd) }

        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))

        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian  // 127.0.0.1
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw .socket(operation: "connect", errno: errno) }

        let payload = body ?? Data()
        var request = Data("\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n".utf8)
        request.append(Data("Content-Type: application/json\r\nContent-Length: \(payload.count)\r\n\r\n".utf8))
        request.append(payload)
        try sendAll(fd, request)

        var response = Data()
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            guard n > 0 else {
                if errno == EINTR { continue }
                throw .socket(operation: "recv", errno: errno)
            }
            response.append(contentsOf: buffer[0..<n])
        }
        return try Self.parse(response, request: "\(method) \(path)")
    }

    private func sendAll(_ fd: Int32, _ data: Data) throws(MockAPNsError) {
        var offset = 0
        while offset < data.count {
            let n = data.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else {
                if n < 0 && errno == EINTR { continue }
                throw .socket(operation: "send", errno: errno)
            }
            offset += n
        }
    }

    /// Splits a `Connection: close` response into status and body; the control API always sends Content-Length,
    /// and reading to EOF makes it unnecessary to honour it.
    static func parse(_ response: Data, request: String) throws(MockAPNsError) -> Data {
        let separator = Data("\r\n\r\n".utf8)
        guard let end = response.range(of: separator),
            let head = String(data: response[..<end.lowerBound], encoding: .utf8),
            let statusLine = head.split(separator: "\r\n", omittingEmptySubsequences: false).first
        else { throw .badControlResponse(request: request, detail: "no HTTP header") }
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw .badControlResponse(request: request, detail: "bad status line \(statusLine)")
        }
        let body = Data(response[end.upperBound...])
        guard (200..<300).contains(status) else {
            throw .controlFailed(request: request, status: status, body: String(decoding: body, as: UTF8.self))
        }
        return body
    }
}
