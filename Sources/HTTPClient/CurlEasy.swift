import CLibCurl

/// Owns one curl easy handle and the error buffer curl writes into: the handle's only Swift owner.
///
/// Not Sendable: a handle is used by one thread at a time (curl's rule), the thread of whoever owns this object.
/// `close()` frees it explicitly (a handle attached to a multi must be removed first); `deinit` frees it too if
/// the owner forgot, so a handle never leaks.
package final class CurlEasy {
    /// The `CURL *`, for `curl_multi_add_handle` and the typed `ccurl_*` setters.
    package let handle: UnsafeMutableRawPointer
    /// `CURLOPT_ERRORBUFFER` is borrowed by curl for the handle's lifetime, so it lives exactly as long.
    private let errorBuffer: UnsafeMutablePointer<CChar>
    private var closed = false

    /// Creates a handle with the options every user of this process needs (`setCommonOptions`).
    /// - Throws: `CurlError` when curl is out of memory or refuses an option.
    package init() throws(CurlError) {
        try CurlGlobal.ensureInitialised()
        guard let handle = curl_easy_init() else { throw .outOfMemory("curl_easy_init") }
        self.handle = handle
        errorBuffer = .allocate(capacity: Int(CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE))
        do {
            try setCommonOptions()
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// Makes a handle whose transfer ended ready for another: every option back to libcurl's default
    /// (`curl_easy_reset`, so nothing of the previous request — body, headers, callbacks and their userdata —
    /// carries over), then this type's own options again. The buffers libcurl allocated for the handle stay, which
    /// is what reusing a handle saves over a fresh one (docs/BENCHMARKS.md, issue 27). Not attached to a multi.
    /// - Throws: `CurlError` when curl refuses an option (it has accepted them once on this handle).
    package func reset() throws(CurlError) {
        curl_easy_reset(handle)
        clearError()
        try setCommonOptions()
    }

    /// The options every handle of this process has: no signals (timeouts must not use SIGALRM in a
    /// multi-threaded process), the detailed error buffer, and no proxy from the environment. Every request goes
    /// straight to its receiver: a webhook's address is checked at connect time (`DestinationPolicy`), so it must
    /// be the receiver's. Both proxy options are set, to "": with only `CURLOPT_PROXY` curl still reads
    /// `no_proxy`/`NO_PROXY`, and with neither it read six environment variables for every request (about 2,000
    /// instructions each time; docs/BENCHMARKS.md, "Fan-out counted against the C loop").
    private func setCommonOptions() throws(CurlError) {
        try curlCheck(ccurl_setopt_long(handle, CURLOPT_NOSIGNAL, 1), "CURLOPT_NOSIGNAL")
        try curlCheck(ccurl_setopt_ptr(handle, CURLOPT_ERRORBUFFER, errorBuffer), "CURLOPT_ERRORBUFFER")
        try curlCheck(ccurl_setopt_str(handle, CURLOPT_PROXY, ""), "CURLOPT_PROXY")
        try curlCheck(ccurl_setopt_str(handle, CURLOPT_NOPROXY, ""), "CURLOPT_NOPROXY")
    }

    /// Forgets the previous transfer's detailed error message.
    package func clearError() { errorBuffer[0] = 0 }

    /// curl's detailed message for the last failure, or its generic one for `code`.
    package func errorMessage(_ code: CURLcode) -> String {
        if errorBuffer[0] != 0 { return String(cString: errorBuffer) }
        return String(cString: curl_easy_strerror(code))
    }

    /// The response status of the finished transfer (0 if none arrived).
    package var responseCode: Int {
        var code = 0
        // 0 if unknown.
        try? curlCheck(ccurl_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &code), "CURLINFO_RESPONSE_CODE")
        return code
    }

    /// New connections the finished transfer had to open (0 when it reused one).
    package var connectionsOpened: Int {
        var count = 0
        // 0 if unknown.
        try? curlCheck(ccurl_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &count), "CURLINFO_NUM_CONNECTS")
        return count
    }

    /// Frees the handle and its buffer; idempotent. The handle must not be attached to a multi.
    package func close() {
        guard !closed else { return }
        closed = true
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
    }
}

@available(*, unavailable, message: "a curl easy handle belongs to one thread")
extension CurlEasy: Sendable {}
