import CLibCurl

/// Owns one libcurl URL handle (`CURLU`): the URL parsed exactly as curl will use it, so what is validated is
/// what gets requested (no second parser to disagree with).
///
/// Not Sendable: like an easy handle, used by one thread at a time.
final class CurlURL {
    let handle: OpaquePointer

    /// Parses `text` strictly: no guessed or default scheme, no spaces.
    /// - Throws: the `CURLUcode` as a `CurlError`.
    init(_ text: String) throws(CurlError) {
        try CurlGlobal.ensureInitialised()
        guard let handle = curl_url() else { throw .outOfMemory("curl_url") }
        let code = curl_url_set(handle, CURLUPART_URL, text, 0)
        guard code == CURLUE_OK else {
            // Freed here, before `self.handle` is set: once every stored property is set, a throwing init
            // still runs `deinit`, which would free it a second time.
            curl_url_cleanup(handle)
            throw CurlError(
                code: Int(code.rawValue), call: "curl_url_set", message: String(cString: curl_url_strerror(code)))
        }
        self.handle = handle
    }

    deinit { curl_url_cleanup(handle) }

    /// One part of the URL (`CURLUPART_SCHEME`, …), or nil when it is absent.
    func part(_ what: CURLUPart, flags: UInt32 = 0) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        guard curl_url_get(handle, what, &value, flags) == CURLUE_OK, let value else { return nil }
        defer { curl_free(value) }
        return String(cString: value)
    }
}

@available(*, unavailable, message: "a CURLU handle belongs to one thread")
extension CurlURL: Sendable {}
