import CLibCurl

/// A libcurl call that failed, with curl's own message.
package struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `CURLcode`, `CURLMcode` or `CURLUcode` value (-1 when curl returned no handle: out of memory).
    package var code: Int
    /// Which call failed.
    package var call: String
    /// `curl_easy_strerror` / `curl_multi_strerror`.
    package var message: String

    package init(code: Int, call: String, message: String) {
        self.code = code
        self.call = call
        self.message = message
    }

    package var description: String { "\(call) failed (\(code)): \(message)" }

    /// A constructor returned NULL: curl's only documented reason is memory.
    package static func outOfMemory(_ call: String) -> CurlError {
        CurlError(code: -1, call: call, message: "out of memory")
    }
}

/// The one place easy-handle return codes are checked. Not `@inlinable`: an inlinable body may reference only
/// `public` or `@usableFromInline` declarations, and `CurlError` is `package` (scripts/public-api.txt); a call
/// beside a libcurl call costs nothing measurable.
package func curlCheck(_ code: CURLcode, _ call: @autoclosure () -> String) throws(CurlError) {
    guard code != CURLE_OK else { return }
    throw CurlError(code: Int(code.rawValue), call: call(), message: String(cString: curl_easy_strerror(code)))
}

/// The one place multi-handle return codes are checked (not `@inlinable`, see `curlCheck`).
package func curlMultiCheck(_ code: CURLMcode, _ call: @autoclosure () -> String) throws(CurlError) {
    guard code != CURLM_OK else { return }
    throw CurlError(code: Int(code.rawValue), call: call(), message: String(cString: curl_multi_strerror(code)))
}

/// The one place URL-handle return codes are checked (not `@inlinable`, see `curlCheck`).
package func curlURLCheck(_ code: CURLUcode, _ call: @autoclosure () -> String) throws(CurlError) {
    guard code != CURLUE_OK else { return }
    throw CurlError(code: Int(code.rawValue), call: call(), message: String(cString: curl_url_strerror(code)))
}
