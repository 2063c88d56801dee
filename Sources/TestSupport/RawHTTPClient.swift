import Foundation
import JSON

#if canImport(Glibc)
    import Glibc
#endif

/// Errors from `RawHTTPClient`.
package enum RawHTTPClientError: Error, Equatable, CustomStringConvertible {
    case connectFailed(Int32)
    case sendFailed(Int32)
    case timedOut
    /// The peer closed before a complete response arrived.
    case closedBeforeResponse
    case malformedResponse(String)

    package var description: String {
        switch self {
        case .connectFailed(let e): return "connect failed: \(String(cString: strerror(e)))"
        case .sendFailed(let e): return "send failed: \(String(cString: strerror(e)))"
        case .timedOut: return "timed out"
        case .closedBeforeResponse: return "connection closed before a complete response"
        case .malformedResponse(let why): return "malformed response: \(why)"
        }
    }
}

/// A tiny blocking HTTP/1.1 client over a raw TCP socket, for end-to-end tests: send exact bytes (malformed ones
/// too), read complete responses (Content-Length, chunked, or until close), reuse a keep-alive connection, and
/// observe whether the server closed it. Every read is bounded by `timeout`.
///
/// ```swift
/// let client = try RawHTTPClient(port: port)
/// let response = try client.request("GET", "/health")
/// try client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
/// let raw = try client.readResponse()
/// ```
package final class RawHTTPClient {
    package let fd: Int32
    /// Seconds any single wait may take.
    package var timeout: Double
    /// Bytes received but not yet consumed by a parsed response.
    package private(set) var buffered: [UInt8] = []
    private var sawEOF = false

    /// Connects to `host:port` (IPv4).
    /// - Throws: `RawHTTPClientError.connectFailed`.
    package init(host: String = "127.0.0.1", port: Int, timeout: Double = 5) throws {
        self.timeout = timeout
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPClientError.connectFailed(errno) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            let e = errno
            Glibc.close(fd)
            throw RawHTTPClientError.connectFailed(e)
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit { close() }

    private var isClosed = false

    /// Closes the socket (idempotent).
    package func close() {
        if !isClosed {
            isClosed = true
            Glibc.close(fd)
        }
    }

    /// Half-closes: the server sees EOF, we can still read.
    package func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// Sends all of `bytes`.
    package func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw RawHTTPClientError.sendFailed(errno)
            }
            offset += n
        }
    }

    /// Sends the UTF-8 bytes of `text`.
    package func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends a request built from parts; adds `Host` and `Content-Length` (when there is a body) unless given.
    package func sendRequest(
        _ method: String, _ target: String, headers: [(String, String)] = [],
        body: [UInt8] = [], version: String = "HTTP/1.1"
    ) throws {
        var head = "\(method) \(target) \(version)\r\n"
        if !headers.contains(where: { $0.0.lowercased() == "host" }) { head += "Host: 127.0.0.1\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let hasFraming = headers.contains { ["content-length", "transfer-encoding"].contains($0.0.lowercased()) }
        if !body.isEmpty && !hasFraming { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        try send(Array(head.utf8) + body)
    }

    /// Sends a request and reads its response (skipping `100 Continue`).
    package func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [],
        version: String = "HTTP/1.1"
    ) throws -> RawHTTPResponse {
        try sendRequest(method, target, headers: headers, body: body, version: version)
        var response = try readResponse(isHead: method == "HEAD")
        while response.status == 100 { response = try readResponse(isHead: method == "HEAD") }
        return response
    }

    /// One request on a fresh connection, closed afterwards.
    package static func request(
        port: Int, host: String = "127.0.0.1", _ method: String, _ target: String,
        headers: [(String, String)] = [], body: [UInt8] = [],
        timeout: Double = 5
    ) throws -> RawHTTPResponse {
        let client = try RawHTTPClient(host: host, port: port, timeout: timeout)
        defer { client.close() }
        return try client.request(method, target, headers: headers, body: body)
    }

    /// Reads one complete response. Interim (1xx) responses are returned too.
    /// - Parameter isHead: the request was HEAD, so no body follows whatever Content-Length says.
    /// - Throws: `.timedOut`, `.closedBeforeResponse`, `.malformedResponse`.
    package func readResponse(isHead: Bool = false) throws -> RawHTTPResponse {
        let deadline = Date().addingTimeInterval(timeout)
        var headEnd: Int?
        while true {
            if let range = findHeadEnd() { headEnd = range; break }
            guard try fill(until: deadline) else {
                throw buffered.isEmpty
                    ? RawHTTPClientError.closedBeforeResponse : RawHTTPClientError.malformedResponse("truncated head")
            }
        }
        let headBytes = Array(buffered[..<headEnd!])
        let text = String(decoding: headBytes, as: UTF8.self)
        var lines = text.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let status = Int(parts[1]) else {
            throw RawHTTPClientError.malformedResponse("status line: \(statusLine)")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else {
                throw RawHTTPClientError.malformedResponse("header: \(line)")
            }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers.append((String(line[..<colon]), value))
        }
        buffered.removeFirst(headEnd! + 4)
        var response = RawHTTPResponse(
            status: status, reason: parts.count > 2 ? String(parts[2]) : "",
            version: String(parts[0]), headers: headers, body: [])
        if isHead || (100..<200).contains(status) || status == 204 || status == 304 { return response }
        if response.header("transfer-encoding")?.lowercased().contains("chunked") == true {
            response.body = try readChunked(until: deadline)
        } else if let lengthText = response.header("content-length") {
            guard let length = Int(lengthText) else { throw RawHTTPClientError.malformedResponse("content-length") }
            while buffered.count < length {
                guard try fill(until: deadline) else { throw RawHTTPClientError.closedBeforeResponse }
            }
            response.body = Array(buffered[..<length])
            buffered.removeFirst(length)
        } else {
            while try fill(until: deadline) {}
            response.body = buffered
            buffered.removeAll()
        }
        return response
    }

    private func readChunked(until deadline: Date) throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let lineEnd = try readLine(until: deadline)
            let line = String(decoding: buffered[..<lineEnd], as: UTF8.self)
            buffered.removeFirst(lineEnd + 2)
            guard let size = Int(line.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw RawHTTPClientError.malformedResponse("chunk size")
            }
            if size == 0 {
                while true {  // trailers
                    let end = try readLine(until: deadline)
                    buffered.removeFirst(end + 2)
                    if end == 0 { return body }
                }
            }
            while buffered.count < size + 2 {
                guard try fill(until: deadline) else { throw RawHTTPClientError.closedBeforeResponse }
            }
            body += buffered[..<size]
            buffered.removeFirst(size + 2)
        }
    }

    private func readLine(until deadline: Date) throws -> Int {
        while true {
            if let i = indexOfCRLF(from: 0) { return i }
            guard try fill(until: deadline) else { throw RawHTTPClientError.closedBeforeResponse }
        }
    }

    private func indexOfCRLF(from start: Int) -> Int? {
        guard buffered.count >= 2 else { return nil }
        var i = start
        while i + 1 < buffered.count {
            if buffered[i] == 13 && buffered[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    private func findHeadEnd() -> Int? {
        guard buffered.count >= 4 else { return nil }
        for i in 0...(buffered.count - 4)
        where buffered[i] == 13 && buffered[i + 1] == 10 && buffered[i + 2] == 13 && buffered[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// Reads more bytes into `buffered`; false on EOF (or reset). Throws `.timedOut` at the deadline.
    @discardableResult
    package func fill(until deadline: Date) throws -> Bool {
        if sawEOF { return false }
        while true {
            let remaining = deadline.timeIntervalSinceNow
            if remaining <= 0 { throw RawHTTPClientError.timedOut }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&pfd, 1, Int32(min(remaining * 1000 + 1, Double(Int32.max))))
            if ready < 0 {
                if errno == EINTR { continue }
                throw RawHTTPClientError.timedOut
            }
            if ready == 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffered += chunk[..<n]
                return true
            }
            if n < 0 && errno == EINTR { continue }
            sawEOF = true
            return false
        }
    }

    /// Reads until the server closes the connection; returns everything not yet consumed.
    /// - Throws: `.timedOut` if the server keeps the connection open past `timeout`.
    package func readUntilClose() throws -> [UInt8] {
        let deadline = Date().addingTimeInterval(timeout)
        while try fill(until: deadline) {}
        let out = buffered
        buffered.removeAll()
        return out
    }

    /// Whether the server closes the connection within `seconds` (bytes arriving meanwhile are kept).
    package func waitForClose(within seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        do {
            while try fill(until: deadline) {}
            return true
        } catch {
            return false
        }
    }
}
