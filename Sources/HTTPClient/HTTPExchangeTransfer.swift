import CLibCurl

/// One `HTTPExchange` on an `HTTPExchangeDriver`'s loop thread: its easy handle and what curl borrows while it
/// runs (header list), the response collected by the callbacks (status, `Retry-After`, body under a cap), and,
/// when the client has a `DestinationPolicy`, the address check on every socket curl opens (`TransferChecks`).
///
/// Owned by the loop thread only (never Sendable); the C callbacks reach it through the `Unmanaged` pointer set as
/// their userdata, valid while the driver keeps the transfer in its table.
final class HTTPExchangeTransfer: OneShotTransfer {
    let curl: CurlEasy
    private let headers: CurlHeaderList
    private let completion: @Sendable (HTTPExchangeResult) -> Void
    private var checks: TransferChecks

    private var status = 0
    private var retryAfter: String?
    /// Lower-case names of the response headers to keep, and what the final response carried of them.
    private let wanted: [[UInt8]]
    private var captured: [String: String] = [:]
    private var body: [UInt8] = []
    private var finished = false
    /// The driver took the handle back for the next exchange (`handOverHandle`): `finish` must not free it.
    private var handedOver = false

    /// Prepares the handle (`reusing` one an earlier exchange of the same driver ended with, else a new one); the
    /// caller attaches it to its multi. `headerList`, when given, is `exchange.headers` plus `Expect:` already
    /// built (the driver shares one list among exchanges with the same lines; curl only reads it).
    /// - Throws: `HTTPExchangeError` (`invalidURL`, `internalError`) when the request cannot even be set up.
    init(
        _ exchange: HTTPExchange, configuration: HTTPExchangeConfiguration, reusing spare: CurlEasy? = nil,
        headerList: CurlHeaderList? = nil, completion: @escaping @Sendable (HTTPExchangeResult) -> Void
    ) throws(HTTPExchangeError) {
        checks = TransferChecks(
            target: exchange.url, policy: configuration.policy,
            maxResponseBytes: configuration.maxResponseBytes)
        wanted = exchange.responseHeaders.prefix(8).map { Array(($0 + ":").lowercased().utf8) }
        self.completion = completion
        if exchange.method != .post && !exchange.body.isEmpty {
            throw HTTPExchangeError(.internalError, "\(exchange.method.rawValue) carries no body")
        }
        if configuration.httpsOnly && exchange.url.scheme != "https" {
            throw HTTPExchangeError(.invalidURL, "\(exchange.url.redacted): only https is allowed")
        }
        // "Expect:" stops curl from waiting a second for `100 Continue` before bodies > 1 KiB.
        do {
            // `??` takes an untyped-throwing autoclosure: `if let` keeps the error type.
            if let headerList { headers = headerList } else { headers = try Self.headerList(exchange.headers) }
            if let spare {
                try spare.reset()
                curl = spare
            } else {
                curl = try CurlEasy()
            }
        } catch {
            throw HTTPExchangeError(.internalError, error.description)
        }
        do {
            try configure(exchange, configuration)
        } catch {
            curl.close()
            throw HTTPExchangeError(.internalError, error.description)
        }
    }

    /// The request's header list: `lines` plus `Expect:`.
    /// - Throws: `CurlError` for a line holding CR, LF or NUL, or when curl is out of memory.
    static func headerList(_ lines: [String]) throws(CurlError) -> CurlHeaderList {
        try CurlHeaderList(lines + ["Expect:"])
    }

    private func configure(_ exchange: HTTPExchange, _ configuration: HTTPExchangeConfiguration) throws(CurlError) {
        let easy = curl.handle
        let me = Unmanaged.passUnretained(self).toOpaque()
        try curlCheck(ccurl_setopt_str(easy, CURLOPT_URL, exchange.url.text), "CURLOPT_URL")
        let protocols = configuration.httpsOnly ? "https" : "http,https"
        try curlCheck(ccurl_setopt_str(easy, CURLOPT_PROTOCOLS_STR, protocols), "CURLOPT_PROTOCOLS_STR")
        // Never a redirect: a 3xx is the answer (it could point at an address the policy would have to re-check).
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0), "CURLOPT_FOLLOWLOCATION")
        if configuration.http2 {
            try curlCheck(ccurl_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS), "CURLOPT_HTTP_VERSION")
            // Wait for the connection being set up to say whether it multiplexes instead of opening another.
            try curlCheck(ccurl_setopt_long(easy, CURLOPT_PIPEWAIT, 1), "CURLOPT_PIPEWAIT")
        } else {
            try curlCheck(ccurl_setopt_long(easy, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1), "CURLOPT_HTTP_VERSION")
        }
        if let caFile = configuration.caFile {
            try curlCheck(ccurl_setopt_str(easy, CURLOPT_CAINFO, caFile), "CURLOPT_CAINFO")
        }
        if configuration.policy != nil {
            try curlCheck(ccurl_setopt_opensocket_cb(easy, exchangeOpenSocket), "CURLOPT_OPENSOCKETFUNCTION")
            try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_OPENSOCKETDATA, me), "CURLOPT_OPENSOCKETDATA")
        }
        try curlCheck(
            ccurl_setopt_long(easy, CURLOPT_TIMEOUT_MS, configuration.timeout.curlMilliseconds), "CURLOPT_TIMEOUT_MS")
        try curlCheck(
            ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds),
            "CURLOPT_CONNECTTIMEOUT_MS")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_MAXAGE_CONN, configuration.maxIdleSeconds), "CURLOPT_MAXAGE_CONN")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1), "CURLOPT_TCP_KEEPALIVE")
        try curlCheck(
            ccurl_setopt_off(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(configuration.maxResponseBytes)),
            "CURLOPT_MAXFILESIZE_LARGE")
        switch exchange.method {
        case .post: try configurePost(exchange)
        case .get: try curlCheck(ccurl_setopt_long(easy, CURLOPT_HTTPGET, 1), "CURLOPT_HTTPGET")
        case .delete: try curlCheck(ccurl_setopt_str(easy, CURLOPT_CUSTOMREQUEST, "DELETE"), "CURLOPT_CUSTOMREQUEST")
        }
        try curlCheck(ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, headers.pointer), "CURLOPT_HTTPHEADER")
        try curlCheck(ccurl_setopt_write_cb(easy, CURLOPT_WRITEFUNCTION, exchangeBody), "CURLOPT_WRITEFUNCTION")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        try curlCheck(ccurl_setopt_header_cb(easy, exchangeHeader), "CURLOPT_HEADERFUNCTION")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_HEADERDATA, me), "CURLOPT_HEADERDATA")
    }

    private func configurePost(_ exchange: HTTPExchange) throws(CurlError) {
        let easy = curl.handle
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_POST, 1), "CURLOPT_POST")
        // POSTFIELDSIZE first: COPYPOSTFIELDS copies exactly that many bytes (the body may contain NUL).
        try curlCheck(
            ccurl_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(exchange.body.count)),
            "CURLOPT_POSTFIELDSIZE_LARGE")
        let copied = exchange.body.withUnsafeBytes { bytes -> CURLcode in
            guard let base = bytes.baseAddress else { return ccurl_setopt_str(easy, CURLOPT_COPYPOSTFIELDS, "") }
            return ccurl_setopt_ptr(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: base))
        }
        try curlCheck(copied, "CURLOPT_COPYPOSTFIELDS")
    }

    /// Reports the outcome once and frees the handle (already removed from the multi) unless the driver took it
    /// back (`handOverHandle`).
    func finish(_ result: HTTPExchangeResult) {
        guard !finished else { return }
        finished = true
        if !handedOver { curl.close() }
        completion(result)
    }

    /// Gives the handle (detached from the multi, its transfer over) to the driver for a later exchange instead of
    /// freeing it in `finish`: a reused handle keeps libcurl's per-handle buffers, which a new one allocates and
    /// frees per request. The next user resets it first (`CurlEasy.reset`).
    func handOverHandle() -> CurlEasy {
        handedOver = true
        return curl
    }

    /// The outcome of a transfer curl reported done with `code`.
    func result(_ code: CURLcode) -> HTTPExchangeResult {
        if code == CURLE_OK {
            return .success(
                HTTPExchangeResponse(
                    status: status > 0 ? status : curl.responseCode, retryAfter: retryAfter,
                    body: body, headers: captured))
        }
        return .failure(checks.failure(code, curl: curl))
    }

    fileprivate func receiveBody(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard checks.count(bytes.count) else { return false }
        body.append(contentsOf: bytes)
        return true
    }

    /// One header line: a status line starts a new response (interim ones included); `Retry-After` is kept.
    fileprivate func receiveHeader(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        guard checks.count(line.count) else { return false }
        if let code = HTTPStatusLine.code(of: line) {
            status = code
            retryAfter = nil
            captured.removeAll()
            return true
        }
        if let value = Self.value(of: Array("retry-after:".utf8), in: line) {
            retryAfter = String(decoding: value.prefix(64), as: UTF8.self)
            return true
        }
        for name in wanted {
            if let value = Self.value(of: name, in: line) {
                captured[String(decoding: name.dropLast(), as: UTF8.self)] = String(
                    decoding: value.prefix(256), as: UTF8.self)
                break
            }
        }
        return true
    }

    /// The value of a `name: value` line whose lower-cased name (colon included) is `name`, trimmed, with every
    /// byte outside printable ASCII replaced: a hostile server could send any bytes (values are parsed or shown,
    /// never echoed raw).
    private static func value(of name: [UInt8], in line: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard line.count > name.count else { return nil }
        for index in name.indices {
            var byte = line[index]
            if byte >= 0x41 && byte <= 0x5A { byte |= 0x20 }
            if byte != name[index] { return nil }
        }
        var start = name.count
        var end = line.count
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x0D || line[end - 1] == 0x0A || line[end - 1] == 0x20 { end -= 1 }
        return line[start..<end].map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "?") }
    }

    fileprivate func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        checks.openSocket(address)
    }
}

// C callbacks: non-capturing, so they convert to curl's function pointer types.

private let exchangeBody: curl_write_callback = { data, size, count, userdata in
    let total = size &* count  // curl documents `size` as always 1
    guard let userdata, let data else { return total }
    let transfer = Unmanaged<HTTPExchangeTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let kept = data.withMemoryRebound(to: UInt8.self, capacity: total) {
        transfer.receiveBody(UnsafeBufferPointer(start: $0, count: total))
    }
    return kept ? total : 0  // any other count makes curl abort with CURLE_WRITE_ERROR
}

private let exchangeHeader: curl_write_callback = { data, size, count, userdata in
    let total = size &* count
    guard let userdata, let data else { return total }
    let transfer = Unmanaged<HTTPExchangeTransfer>.fromOpaque(userdata).takeUnretainedValue()
    let kept = data.withMemoryRebound(to: UInt8.self, capacity: total) {
        transfer.receiveHeader(UnsafeBufferPointer(start: $0, count: total))
    }
    return kept ? total : 0
}

private let exchangeOpenSocket: curl_opensocket_callback = { clientp, purpose, address in
    guard let clientp, let address, purpose == CURLSOCKTYPE_IPCXN else { return CURL_SOCKET_BAD }
    return Unmanaged<HTTPExchangeTransfer>.fromOpaque(clientp).takeUnretainedValue().openSocket(address)
}
