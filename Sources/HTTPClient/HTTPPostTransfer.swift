import CLibCurl

/// One outbound POST on the client's loop thread: its easy handle and everything curl borrows while it runs
/// (parsed URL, header list), and its `TransferChecks`: the destination check on every socket curl opens and the
/// response size cap.
///
/// Owned by `HTTPPostClient`'s loop thread only (never Sendable); the C callbacks reach it through the
/// `Unmanaged` pointer set as their userdata, valid while the loop keeps the transfer in its table.
final class HTTPPostTransfer: OneShotTransfer {
    let curl: CurlEasy
    private let url: CurlURL
    private let headers: CurlHeaderList
    private let completion: (Result<Int, HTTPPostError>) -> Void
    private var checks: TransferChecks
    private var finished = false

    /// Prepares the handle; the caller attaches it to its multi.
    /// - Throws: `HTTPPostError` (`invalidURL`, `internalError`) when the request cannot even be set up.
    init(target: HTTPURL, headers: [String: String], body: [UInt8], configuration: HTTPPostConfiguration,
         completion: @escaping (Result<Int, HTTPPostError>) -> Void) throws(HTTPPostError) {
        checks = TransferChecks(target: target, policy: configuration.policy,
                                maxResponseBytes: configuration.maxResponseBytes)
        self.completion = completion
        do {
            url = try CurlURL(target.text)
        } catch {
            throw HTTPPostError(.invalidURL, "\(target.redacted): \(error.message)")
        }
        // "Expect:" stops curl from sending `Expect: 100-continue` and waiting a second for bodies > 1 KiB.
        let lines = headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" } + ["Expect:"]
        do {
            self.headers = try CurlHeaderList(lines)
            curl = try CurlEasy()
        } catch {
            throw HTTPPostError(.internalError, error.description)
        }
        do {
            try configure(body: body, configuration: configuration)
        } catch {
            curl.close()
            throw HTTPPostError(.internalError, error.description)
        }
    }

    private func configure(body: [UInt8], configuration: HTTPPostConfiguration) throws(CurlError) {
        let easy = curl.handle
        let me = Unmanaged.passUnretained(self).toOpaque()
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_CURLU, UnsafeMutableRawPointer(url.handle)), "CURLOPT_CURLU")
        // Only http and https, and never a redirect: a 3xx is the receiver's answer, not an instruction to
        // POST somewhere else (it could point at an internal address the policy would have to re-check).
        try curlCheck(ccurl_setopt_str(easy, CURLOPT_PROTOCOLS_STR, "http,https"), "CURLOPT_PROTOCOLS_STR")
        try curlCheck(ccurl_setopt_str(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https"), "CURLOPT_REDIR_PROTOCOLS_STR")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0), "CURLOPT_FOLLOWLOCATION")
        // An empty proxy disables http_proxy & co. from the environment: through a proxy, the address checked
        // at connect time would be the proxy's, not the receiver's.
        try curlCheck(ccurl_setopt_str(easy, CURLOPT_PROXY, ""), "CURLOPT_PROXY")
        try curlCheck(ccurl_setopt_opensocket_cb(easy, httpPostOpenSocket), "CURLOPT_OPENSOCKETFUNCTION")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_OPENSOCKETDATA, me), "CURLOPT_OPENSOCKETDATA")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_TIMEOUT_MS, configuration.timeout.curlMilliseconds), "CURLOPT_TIMEOUT_MS")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.curlMilliseconds),
                      "CURLOPT_CONNECTTIMEOUT_MS")
        // Refuses an announced Content-Length over the cap before reading it; the callbacks cap the rest.
        try curlCheck(ccurl_setopt_off(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(configuration.maxResponseBytes)),
                      "CURLOPT_MAXFILESIZE_LARGE")
        try curlCheck(ccurl_setopt_long(easy, CURLOPT_POST, 1), "CURLOPT_POST")
        // POSTFIELDSIZE first: COPYPOSTFIELDS copies exactly that many bytes (the body may contain NUL).
        try curlCheck(ccurl_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)), "CURLOPT_POSTFIELDSIZE_LARGE")
        let copied = body.withUnsafeBytes { bytes -> CURLcode in
            // An empty array may have no storage: give curl a valid (empty) string to copy zero bytes from.
            guard let base = bytes.baseAddress else { return ccurl_setopt_str(easy, CURLOPT_COPYPOSTFIELDS, "") }
            return ccurl_setopt_ptr(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: base))
        }
        try curlCheck(copied, "CURLOPT_COPYPOSTFIELDS")
        try curlCheck(ccurl_setopt_slist(easy, CURLOPT_HTTPHEADER, headers.pointer), "CURLOPT_HTTPHEADER")
        try curlCheck(ccurl_setopt_write_cb(easy, CURLOPT_WRITEFUNCTION, httpPostReceive), "CURLOPT_WRITEFUNCTION")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_WRITEDATA, me), "CURLOPT_WRITEDATA")
        try curlCheck(ccurl_setopt_header_cb(easy, httpPostReceive), "CURLOPT_HEADERFUNCTION")
        try curlCheck(ccurl_setopt_ptr(easy, CURLOPT_HEADERDATA, me), "CURLOPT_HEADERDATA")
    }

    /// Reports the outcome once and frees the handle (already removed from the multi).
    func finish(_ result: Result<Int, HTTPPostError>) {
        guard !finished else { return }
        finished = true
        curl.close()
        completion(result)
    }

    /// The outcome of a transfer curl reported done with `code`.
    func result(_ code: CURLcode) -> Result<Int, HTTPPostError> {
        code == CURLE_OK ? .success(curl.responseCode) : .failure(checks.failure(code, curl: curl))
    }

    /// Counts response bytes; false (abort) once they pass the cap.
    fileprivate func receive(_ count: Int) -> Bool { checks.count(count) }

    fileprivate func openSocket(_ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        checks.openSocket(address)
    }
}

// C callbacks: non-capturing, so they convert to curl's function pointer types.

/// Body and header bytes: counted against the cap, then dropped (a webhook's answer is its status code).
private let httpPostReceive: curl_write_callback = { _, size, count, userdata in
    guard let userdata else { return 0 }
    let total = size &* count  // curl documents `size` as always 1
    let transfer = Unmanaged<HTTPPostTransfer>.fromOpaque(userdata).takeUnretainedValue()
    // Returning a count other than `total` makes curl abort with CURLE_WRITE_ERROR.
    return transfer.receive(total) ? total : 0
}

private let httpPostOpenSocket: curl_opensocket_callback = { clientp, purpose, address in
    guard let clientp, let address, purpose == CURLSOCKTYPE_IPCXN else { return CURL_SOCKET_BAD }
    return Unmanaged<HTTPPostTransfer>.fromOpaque(clientp).takeUnretainedValue().openSocket(address)
}
