// Over 300 lines on purpose: one state enum and the transitions between its states (request line, headers, body
// framings, chunks, trailers) read best together; the field and line syntax helpers at the bottom share its buffer.

import Glibc

/// An HTTP/1.1 request parser: a pure state machine fed raw bytes, with no sockets, clocks or threads.
///
/// Use: `append` bytes as they arrive, then call `next()` until it returns `.needMoreData`.
/// 1. `.head(head)` — the request line and headers are complete. The caller picks the body limit (it depends on
///    the route) and calls `beginBody(limit:)`; nothing else is parsed until then.
/// 2. `.body(bytes, trailers)` — the whole body has arrived (empty for body-less requests). The parser is ready for
///    the next pipelined request; bytes already buffered stay buffered.
/// 3. `.error(e)` — the request is malformed; the parser stays failed (the connection must close).
///
/// Strictness (RFC 9112): lines end with CRLF only — a bare LF or bare CR is rejected (we never guess framing);
/// obs-fold is rejected; whitespace before a header colon is rejected; Content-Length together with
/// Transfer-Encoding is rejected (request smuggling, §6.1); only `chunked` is implemented as a transfer coding.
public struct RequestParser: Sendable {
    /// Outcome of `beginBody(limit:)`.
    public enum BodyStart: Equatable, Sendable {
        /// The request has no body; `next()` returns an empty `.body` next.
        case noBody
        /// Body bytes will be read (send `100 Continue` now if the client asked for it).
        case read
        /// The declared Content-Length exceeds the limit; nothing of the body was read.
        case tooLarge
    }

    /// What `next()` found.
    public enum Event: Sendable {
        case needMoreData
        case head(RequestHead)
        case body([UInt8], trailers: HTTPHeaders)
        case error(HTTPParseError)
    }

    /// The byte limits the parser enforces itself; body limits come per request through `beginBody`.
    public struct Limits: Sendable {
        package var maxRequestLineBytes: Int
        package var maxHeaderBytes: Int
        package var maxHeaderCount: Int
        /// A chunk-size line including extensions.
        package var maxChunkLineBytes: Int

        /// Defaults match `HTTPLimits`.
        public init(
            maxRequestLineBytes: Int = 8192, maxHeaderBytes: Int = 32768, maxHeaderCount: Int = 100,
            maxChunkLineBytes: Int = 4096
        ) {
            self.maxRequestLineBytes = maxRequestLineBytes
            self.maxHeaderBytes = maxHeaderBytes
            self.maxHeaderCount = maxHeaderCount
            self.maxChunkLineBytes = maxChunkLineBytes
        }
    }

    private enum State: Sendable {
        case requestLine
        case headers
        case awaitingBodyDecision
        case noBody
        case fixedBody(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailers
        case failed(HTTPParseError)
    }

    private let limits: Limits
    private var state: State = .requestLine
    private var buffer: [UInt8] = []
    private var readIndex = 0
    /// Where the LF search of the current line resumes, so trickled bytes are not rescanned.
    private var scanIndex = 0
    /// Bytes of the current request line's method already checked to be tchars, counted from `readIndex` (so
    /// compaction does not move it), and whether its closing space has arrived.
    private var methodBytesChecked = 0
    private var methodComplete = false

    // Per-message state.
    private var method = HTTPMethod.get
    private var target = ""
    private var minorVersion = 1
    private var headers = HTTPHeaders()
    private var headerBytes = 0
    private var framing = BodyFraming.none
    private var body: [UInt8] = []
    private var bodyLimit = 0
    private var trailers = HTTPHeaders()
    private var trailerBytes = 0

    /// Total bytes consumed (for access-log byte counts).
    package private(set) var consumedBytes = 0

    /// A parser waiting for the first request line.
    public init(limits: Limits = Limits()) { self.limits = limits }

    /// Whether no byte of a next request has arrived (between requests on a keep-alive connection).
    package var isIdle: Bool {
        if case .requestLine = state { return readIndex == buffer.count }
        return false
    }

    /// Bytes received but not parsed yet.
    package var bufferedBytes: Int { buffer.count - readIndex }

    /// The largest buffer kept for the next bytes once everything in it was parsed.
    static let keptBufferCapacity = 128 * 1024

    /// Adds received bytes.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes.bindMemory(to: UInt8.self))
    }

    /// Adds received bytes.
    public mutating func append(_ bytes: [UInt8]) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        if readIndex == buffer.count {
            // A buffer a body's burst grew is given back: a held upload would otherwise keep its bytes twice,
            // once here and once in `body`.
            buffer.removeAll(keepingCapacity: buffer.capacity <= Self.keptBufferCapacity)
            scanIndex -= readIndex
            readIndex = 0
        } else if readIndex > 16384 && readIndex * 2 > buffer.count {
            buffer.removeFirst(readIndex)
            scanIndex -= readIndex
            readIndex = 0
        }
    }

    /// Decides how the body of the request whose head was just returned is read.
    public mutating func beginBody(limit: Int) -> BodyStart {
        guard case .awaitingBodyDecision = state else {
            preconditionFailure("beginBody called without a pending head")
        }
        body = []
        bodyLimit = limit
        switch framing {
        case .none:
            state = .noBody
            return .noBody
        case .contentLength(let n):
            if n > limit {
                state = .failed(.bodyTooLarge)
                return .tooLarge
            }
            // A declared length is only a claim: reserve a bounded amount so idle clients cannot pin memory.
            body.reserveCapacity(min(n, 64 * 1024))
            state = n == 0 ? .noBody : .fixedBody(remaining: n)
            return n == 0 ? .noBody : .read
        case .chunked:
            state = .chunkSize
            return .read
        }
    }

    /// The declared body was admitted (its bytes are budgeted): one allocation for all of it rather than doubling
    /// copies as it arrives. Pages not yet written stay unbacked, so a body that never comes costs little.
    package mutating func reserveDeclaredBody() {
        if case .fixedBody(let remaining) = state, body.isEmpty { body.reserveCapacity(remaining) }
    }

    /// Parses as far as the buffered bytes allow.
    public mutating func next() -> Event {
        while true {
            switch state {
            case .failed(let e):
                return .error(e)
            case .awaitingBodyDecision:
                return .needMoreData
            case .requestLine:
                // RFC 9112 §2.2: a server SHOULD ignore at least one empty line (CRLF) received before the
                // request-line; clients send one after a POST body.
                while bufferedBytes >= 2 && buffer[readIndex] == ASCII.cr && buffer[readIndex + 1] == ASCII.lf {
                    advance(to: readIndex + 2)
                }
                if let e = checkMethodSoFar() { return fail(e) }
                switch nextLine(limit: limits.maxRequestLineBytes, tooLong: .requestLineTooLong) {
                case .none: return .needMoreData
                case .failure(let e): return fail(e)
                case .line(let start, let end):
                    if let e = parseRequestLine(start, end) { return fail(e) }
                    advance(to: end + 2)
                    methodBytesChecked = 0
                    methodComplete = false
                    headers = HTTPHeaders()
                    headerBytes = 0
                    state = .headers
                }
            case .headers:
                let remaining = limits.maxHeaderBytes - headerBytes
                switch nextLine(limit: max(remaining, 0), tooLong: .headersTooLarge) {
                case .none: return .needMoreData
                case .failure(let e): return fail(e)
                case .line(let start, let end):
                    headerBytes += end + 2 - start
                    advance(to: end + 2)
                    if start == end {
                        switch finishHead() {
                        case .success(let head):
                            framing = head.framing
                            state = .awaitingBodyDecision
                            return .head(head)
                        case .failure(let e):
                            return fail(e)
                        }
                    }
                    if headers.count >= limits.maxHeaderCount { return fail(.tooManyHeaders) }
                    switch parseField(start, end) {
                    case .success(let field): headers.add(field.0, field.1)
                    case .failure(let e): return fail(e)
                    }
                }
            case .noBody:
                state = .requestLine
                return .body([], trailers: HTTPHeaders())
            case .fixedBody(let remaining):
                let n = min(remaining, bufferedBytes)
                if n == 0 { return .needMoreData }
                body.append(contentsOf: buffer[readIndex..<readIndex + n])
                advance(to: readIndex + n)
                compact()
                if n == remaining {
                    state = .requestLine
                    return completeBody(trailers: HTTPHeaders())
                }
                state = .fixedBody(remaining: remaining - n)
            case .chunkSize:
                switch nextLine(limit: limits.maxChunkLineBytes, tooLong: .bad("Chunk size line is too long")) {
                case .none: return .needMoreData
                case .failure(let e): return fail(e)
                case .line(let start, let end):
                    switch parseChunkSize(start, end) {
                    case .failure(let e): return fail(e)
                    case .success(let size):
                        advance(to: end + 2)
                        if size == 0 {
                            trailers = HTTPHeaders()
                            trailerBytes = 0
                            state = .trailers
                        } else if size > bodyLimit - body.count {
                            return fail(.bodyTooLarge)
                        } else {
                            state = .chunkData(remaining: size)
                        }
                    }
                }
            case .chunkData(let remaining):
                let n = min(remaining, bufferedBytes)
                if n == 0 { return .needMoreData }
                body.append(contentsOf: buffer[readIndex..<readIndex + n])
                advance(to: readIndex + n)
                compact()
                state = n == remaining ? .chunkDataEnd : .chunkData(remaining: remaining - n)
            case .chunkDataEnd:
                if bufferedBytes < 2 { return .needMoreData }
                guard buffer[readIndex] == ASCII.cr && buffer[readIndex + 1] == ASCII.lf else {
                    return fail(.bad("Chunk data is not followed by CRLF"))
                }
                advance(to: readIndex + 2)
                state = .chunkSize
            case .trailers:
                let remaining = limits.maxHeaderBytes - trailerBytes
                switch nextLine(limit: max(remaining, 0), tooLong: .headersTooLarge) {
                case .none: return .needMoreData
                case .failure(let e): return fail(e)
                case .line(let start, let end):
                    trailerBytes += end + 2 - start
                    advance(to: end + 2)
                    if start == end {
                        state = .requestLine
                        return completeBody(trailers: trailers)
                    }
                    if trailers.count >= limits.maxHeaderCount { return fail(.tooManyHeaders) }
                    switch parseField(start, end) {
                    case .success(let field): trailers.add(field.0, field.1)
                    case .failure(let e): return fail(e)
                    }
                }
            }
        }
    }

    private mutating func completeBody(trailers: HTTPHeaders) -> Event {
        let out = body
        body = []
        return .body(out, trailers: trailers)
    }

    private mutating func fail(_ e: HTTPParseError) -> Event {
        state = .failed(e)
        return .error(e)
    }

    private mutating func advance(to index: Int) {
        consumedBytes += index - readIndex
        readIndex = index
        if scanIndex < readIndex { scanIndex = readIndex }
    }

    private enum LineResult {
        case none
        /// `start..<end` excludes the CRLF; the CR is at `end`, the LF at `end + 1`.
        case line(Int, Int)
        case failure(HTTPParseError)
    }

    /// Finds the next CRLF-terminated line. Bare LF is rejected (we never accept LF alone as a line end:
    /// lenient line endings are a classic request-smuggling vector when a proxy disagrees).
    private mutating func nextLine(limit: Int, tooLong: HTTPParseError) -> LineResult {
        if scanIndex < readIndex { scanIndex = readIndex }
        let count = buffer.count
        let found: Int? = buffer.withUnsafeBufferPointer { p -> Int? in
            guard scanIndex < count else { return nil }
            let base = p.baseAddress! + scanIndex
            guard let hit = memchr(base, Int32(ASCII.lf), count - scanIndex) else { return nil }
            return scanIndex + (UnsafeRawPointer(hit) - UnsafeRawPointer(base))
        }
        guard let lf = found else {
            scanIndex = count
            // Only the partial line so far counts; one byte of slack is the pending CR.
            if count - readIndex > limit + 1 { return .failure(tooLong) }
            return .none
        }
        if lf - 1 - readIndex > limit { return .failure(tooLong) }
        guard lf > readIndex && buffer[lf - 1] == ASCII.cr else { return .failure(.bad("Bare LF line ending")) }
        scanIndex = lf + 1
        return .line(readIndex, lf - 1)
    }

    /// Fails as soon as a byte arrives that no method can start or continue with, instead of waiting for the end
    /// of a line that may never come: a TLS ClientHello (0x16 0x03 …) sent to the plain port, or any other binary
    /// protocol, is answered and closed at once rather than holding the connection until the header timeout.
    /// Incremental: each byte is looked at once however the line trickles in. Only the bytes the request line may
    /// hold (`nextLine`'s limit plus its one byte of slack) are judged here: a byte beyond them is the too-long line's
    /// business, so the answer is 414 or 400 whether the bytes arrive in one read or many (found by fuzzing, see
    /// docs/SECURITY.md: a non-token byte past the limit got 400 when it came with the rest, 414 when it came later).
    private mutating func checkMethodSoFar() -> HTTPParseError? {
        if methodComplete { return nil }
        var i = readIndex + methodBytesChecked
        defer { methodBytesChecked = i - readIndex }
        let end = min(buffer.count, readIndex + limits.maxRequestLineBytes + 1)
        while i < end {
            let c = buffer[i]
            if ASCII.isTchar(c) {
                i += 1
                continue
            }
            if c == ASCII.space && i > readIndex {
                methodComplete = true
                return nil
            }
            if i == readIndex && c == ASCII.cr {
                // An empty line before the request line; the loop above consumed every complete CRLF, so this CR
                // is either the last byte so far (wait for its LF) or followed by something else.
                return i + 1 < buffer.count ? .bad("Invalid method") : nil
            }
            if i == readIndex && c == ASCII.lf { return .bad("Bare LF line ending") }
            return .bad("Invalid method")
        }
        return nil
    }

    private mutating func parseRequestLine(_ start: Int, _ end: Int) -> HTTPParseError? {
        // method SP request-target SP HTTP-version (RFC 9112 §3), single spaces only.
        var i = start
        while i < end && buffer[i] != ASCII.space {
            guard ASCII.isTchar(buffer[i]) else { return .bad("Invalid method") }
            i += 1
        }
        guard i > start, i < end else { return .bad("Invalid method") }
        let methodEnd = i
        i += 1
        let targetStart = i
        while i < end && buffer[i] != ASCII.space {
            // Targets are visible US-ASCII; anything else must be percent-encoded (RFC 3986).
            guard buffer[i] > 0x20 && buffer[i] < 0x7F else { return .bad("Invalid request target") }
            i += 1
        }
        guard i > targetStart, i < end else { return .bad("Invalid request target") }
        let targetEnd = i
        i += 1
        guard end - i == 8,
            buffer[i] == UInt8(ascii: "H"), buffer[i + 1] == UInt8(ascii: "T"), buffer[i + 2] == UInt8(ascii: "T"),
            buffer[i + 3] == UInt8(ascii: "P"), buffer[i + 4] == UInt8(ascii: "/"),
            buffer[i + 6] == UInt8(ascii: "."),
            let major = decimal(buffer[i + 5]), let minor = decimal(buffer[i + 7])
        else { return .bad("Invalid HTTP version") }
        guard major == 1, minor <= 1 else { return .versionNotSupported }
        minorVersion = Int(minor)
        method = Self.method(buffer[start..<methodEnd])
        target = String(decoding: buffer[targetStart..<targetEnd], as: UTF8.self)
        let first = buffer[targetStart]
        if first != UInt8(ascii: "/") {
            // origin-form is the norm; absolute-form must be accepted (RFC 9112 §3.2.2); asterisk-form only
            // for OPTIONS. authority-form (CONNECT) is not supported.
            let isAbsolute = target.hasPrefix("http://") || target.hasPrefix("https://")
            let isAsterisk = target == "*" && method == .options
            guard isAbsolute || isAsterisk else { return .bad("Invalid request target") }
        }
        return nil
    }

    private static func method(_ bytes: ArraySlice<UInt8>) -> HTTPMethod {
        // Avoid a String allocation for the common methods.
        switch bytes.count {
        case 3:
            if bytes.elementsEqual("GET".utf8) { return .get }
            if bytes.elementsEqual("PUT".utf8) { return .put }
        case 4:
            if bytes.elementsEqual("POST".utf8) { return .post }
            if bytes.elementsEqual("HEAD".utf8) { return .head }
        case 6:
            if bytes.elementsEqual("DELETE".utf8) { return .delete }
        default: break
        }
        return HTTPMethod(String(decoding: bytes, as: UTF8.self))
    }

    private func decimal(_ c: UInt8) -> UInt8? {
        c >= 48 && c <= 57 ? c - 48 : nil
    }

    /// field-line = field-name ":" OWS field-value OWS (RFC 9112 §5).
    private func parseField(_ start: Int, _ end: Int) -> Result<(String, String), HTTPParseError> {
        let first = buffer[start]
        if first == ASCII.space || first == ASCII.tab {
            // obs-fold (RFC 9112 §5.2): a server MUST reject it or unfold it; we reject.
            return .failure(.bad("Obsolete line folding in header"))
        }
        var i = start
        while i < end && buffer[i] != ASCII.colon {
            let c = buffer[i]
            if c == ASCII.space || c == ASCII.tab {
                // RFC 9112 §5.1: no whitespace between field name and colon; MUST reject with 400.
                return .failure(.bad("Whitespace before header colon"))
            }
            guard ASCII.isTchar(c) else { return .failure(.bad("Invalid header name")) }
            i += 1
        }
        guard i < end, i > start else { return .failure(.bad("Invalid header line")) }
        let name = String(decoding: buffer[start..<i], as: UTF8.self)
        var vStart = i + 1
        var vEnd = end
        while vStart < vEnd && (buffer[vStart] == ASCII.space || buffer[vStart] == ASCII.tab) { vStart += 1 }
        while vEnd > vStart && (buffer[vEnd - 1] == ASCII.space || buffer[vEnd - 1] == ASCII.tab) { vEnd -= 1 }
        for j in vStart..<vEnd where !ASCII.isFieldValueByte(buffer[j]) {
            return .failure(.bad("Invalid character in header value"))
        }
        return .success((name, String(decoding: buffer[vStart..<vEnd], as: UTF8.self)))
    }

    /// chunk = chunk-size [ chunk-ext ] CRLF (RFC 9112 §7.1). Extensions are validated and ignored.
    private func parseChunkSize(_ start: Int, _ end: Int) -> Result<Int, HTTPParseError> {
        var i = start
        var size = 0
        while i < end, let digit = ASCII.hexValue(buffer[i]) {
            let (shifted, o1) = size.multipliedReportingOverflow(by: 16)
            let (sum, o2) = shifted.addingReportingOverflow(Int(digit))
            if o1 || o2 { return .failure(.bad("Chunk size overflow")) }
            size = sum
            i += 1
        }
        guard i > start else { return .failure(.bad("Invalid chunk size")) }
        while i < end && (buffer[i] == ASCII.space || buffer[i] == ASCII.tab) { i += 1 }
        if i < end {
            guard buffer[i] == UInt8(ascii: ";") else { return .failure(.bad("Invalid chunk size")) }
            for j in i..<end where !ASCII.isFieldValueByte(buffer[j]) {
                return .failure(.bad("Invalid chunk extension"))
            }
        }
        return .success(size)
    }

    /// Applies the message-level rules once the header section is complete.
    private func finishHead() -> Result<RequestHead, HTTPParseError> {
        // The fields the message rules read, gathered in one pass over the header section (arrays only for the
        // fields a request actually carries).
        var hostCount = 0
        var lengths: [String] = []
        var transferEncodings: [String] = []
        var connectionValues: [String] = []
        var expect: String?
        for field in headers.fields {
            let name = field.name
            if HTTPHeaders.equalsIgnoringCase(name, "host") {
                hostCount += 1
            } else if HTTPHeaders.equalsIgnoringCase(name, "content-length") {
                lengths.append(field.value)
            } else if HTTPHeaders.equalsIgnoringCase(name, "transfer-encoding") {
                transferEncodings.append(field.value)
            } else if HTTPHeaders.equalsIgnoringCase(name, "connection") {
                connectionValues.append(field.value)
            } else if expect == nil && HTTPHeaders.equalsIgnoringCase(name, "expect") {
                expect = field.value
            }
        }

        // RFC 9112 §3.2: an HTTP/1.1 request without exactly one Host field gets 400.
        if hostCount > 1 || (minorVersion == 1 && hostCount == 0) {
            return .failure(.bad("Missing or repeated Host header"))
        }

        var framing = BodyFraming.none
        if !transferEncodings.isEmpty {
            // RFC 9112 §6.1: CL with TE "ought to be handled as an error" by a server — it is how requests are
            // smuggled past a proxy that frames differently.
            if !lengths.isEmpty { return .failure(.bad("Content-Length with Transfer-Encoding")) }
            if minorVersion == 0 { return .failure(.bad("Transfer-Encoding in an HTTP/1.0 request")) }
            var codings: [Substring] = []
            for value in transferEncodings {
                for element in value.split(separator: ",", omittingEmptySubsequences: false) {
                    codings.append(element.trimmingASCIIWhitespace())
                }
            }
            guard !codings.isEmpty, codings.allSatisfy({ !$0.isEmpty }) else {
                return .failure(.bad("Invalid Transfer-Encoding"))
            }
            let isChunked = codings.map { $0.lowercased() == "chunked" }
            // The final coding must be chunked, else the length is unknowable (§6.3 rule 4), and chunked
            // must not be applied twice (RFC 9112 §7).
            guard isChunked.last == true, isChunked.filter({ $0 }).count == 1 else {
                return .failure(.bad("Transfer-Encoding must end with chunked"))
            }
            // Any other coding (gzip, compress, unknown ones) is not implemented: 501 (RFC 9112 §6.1).
            if codings.count > 1 { return .failure(.unsupportedTransferCoding) }
            framing = .chunked
        } else if !lengths.isEmpty {
            // Content-Length = 1*DIGIT; repeated identical values (also as a list) are allowed, different ones
            // are an error (RFC 9110 §8.6).
            var value: Int?
            for field in lengths {
                for element in field.split(separator: ",", omittingEmptySubsequences: false) {
                    let digits = element.trimmingASCIIWhitespace()
                    guard !digits.isEmpty, digits.utf8.count <= 18, digits.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                        let n = Int(digits)
                    else { return .failure(.bad("Invalid Content-Length")) }
                    if let v = value, v != n { return .failure(.bad("Conflicting Content-Length values")) }
                    value = n
                }
            }
            // `split` yields at least one element per field, so a value was read; the guard only spares a `!`.
            guard let length = value else { return .failure(.bad("Invalid Content-Length")) }
            framing = .contentLength(length)
        }

        let connection = connectionValues.isEmpty ? [] : HTTPHeaders.listTokens(connectionValues)
        let keepAlive: Bool
        if connection.contains("close") {
            keepAlive = false
        } else {
            keepAlive = minorVersion == 1 || connection.contains("keep-alive")
        }

        var expectsContinue = false
        // RFC 9110 §10.1.1: a server MUST ignore a 100-continue expectation in an HTTP/1.0 request; any other
        // expectation may be answered with 417.
        if minorVersion == 1, let expect {
            guard expect.lowercased() == "100-continue" else { return .failure(.expectationFailed) }
            if framing != .none && framing != .contentLength(0) { expectsContinue = true }
        }

        return .success(
            RequestHead(
                method: method, target: target, minorVersion: minorVersion, headers: headers,
                framing: framing, keepAlive: keepAlive, expectsContinue: expectsContinue))
    }
}
