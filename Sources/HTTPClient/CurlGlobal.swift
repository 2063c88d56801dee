import CLibCurl

/// Process-wide libcurl setup, done once before any handle exists (curl_global_init is not thread-safe).
package enum CurlGlobal {
    private static let initialised: Result<Void, CurlError> = {
        let code = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        if code != CURLE_OK {
            return .failure(
                CurlError(
                    code: Int(code.rawValue), call: "curl_global_init",
                    message: String(cString: curl_easy_strerror(code))))
        }
        return .success(())
    }()

    /// Initialises libcurl on first call; later calls return the first result.
    package static func ensureInitialised() throws(CurlError) {
        if case .failure(let error) = initialised { throw error }
    }

    /// Whether this libcurl was built with HTTP/2 (nghttp2).
    package static var supportsHTTP2: Bool {
        guard let info = ccurl_version_info_now() else { return false }
        return info.pointee.features & CURL_VERSION_HTTP2 != 0
    }

    /// `libcurl/7.88.1 OpenSSL/3.0 nghttp2/1.52.0`-style version string.
    package static var version: String { String(cString: curl_version()) }
}
