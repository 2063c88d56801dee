import CLibCurl

/// Owns one libcurl URL handle (`CURLU`): the URL parsed exactly as curl will use it, so what is validated is
/// what gets requested (no second parser to disagree with).
///
/// Not Sendable: like an easy handle, used by one thread at a time. An easy handle given this one with
/// `CURLOPT_CURLU` reads it at the start of each transfer (curl never writes it); it may be changed between
/// transfers, never while one runs, and must outlive the easy handle's use of it.
package final class CurlURL {
    package let handle: OpaquePointer

    /// Parses `text` strictly: no guessed or default scheme, no spaces.
    /// - Throws: the `CURLUcode` as a `CurlError`.
    package init(_ text: String) throws(CurlError) {
        try CurlGlobal.ensureInitialised()
        guard let handle = curl_url() else { throw .outOfMemory("curl_url") }
        do {
            try curlURLCheck(curl_url_set(handle, CURLUPART_URL, text, 0), "curl_url_set")
        } catch {
            // Freed here, before `self.handle` is set: once every stored property is set, a throwing init
            // still runs `deinit`, which would free it a second time.
            curl_url_cleanup(handle)
            throw error
        }
        self.handle = handle
    }

    deinit { curl_url_cleanup(handle) }

    /// Replaces one part of the URL (`CURLUPART_PATH`, …) with the NUL-terminated `value`, taken as written (no
    /// URL encoding); curl copies it.
    package func set(_ what: CURLUPart, _ value: UnsafePointer<CChar>) throws(CurlError) {
        try curlURLCheck(curl_url_set(handle, what, value, 0), "curl_url_set")
    }

    /// One part of the URL (`CURLUPART_SCHEME`, …), or nil when it is absent.
    package func part(_ what: CURLUPart, flags: UInt32 = 0) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, what, &value, flags) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}

@available(*, unavailable, message: "a CURLU handle belongs to one thread")
extension CurlURL: Sendable {}
