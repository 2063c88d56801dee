import CLibCurl

/// A libcurl call that failed, with curl's own message.
public struct CurlError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The `CURLcode` or `CURLMcode` value.
    public var code: Int
    /// Which call failed.
    public var call: String
    /// `curl_easy_strerror` / `curl_multi_strerror`.
    public var message: String

    public var description: String { "\(call) failed (\(code)): \(message)" }
}

/// The one place easy-handle return codes are checked.
@inline(__always)
func curlCheck(_ code: CURLcode, _ call: @autoclosure () -> String) throws(CurlError) {
    guard code != CURLE_OK else { return }
    throw CurlError(code: Int(code.rawValue), call: call(), message: String(cString: curl_easy_strerror(code)))
}

/// The one place multi-handle return codes are checked.
@inline(__always)
func curlMultiCheck(_ code: CURLMcode, _ call: @autoclosure () -> String) throws(CurlError) {
    guard code != CURLM_OK else { return }
    throw CurlError(code: Int(code.rawValue), call: call(), message: String(cString: curl_multi_strerror(code)))
}

/// Process-wide libcurl setup, done once before any handle exists (curl_global_init is not thread-safe).
enum CurlGlobal {
    private static let initialised: Result<Void, CurlError> = {
        let code = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
        if code != CURLE_OK {
            return .failure(CurlError(code: Int(code.rawValue), call: "curl_global_init",
                                      message: String(cString: curl_easy_strerror(code))))
        }
        return .success(())
    }()

    /// Initialises libcurl on first call; later calls return the first result.
    static func ensureInitialised() throws(CurlError) {
        if case .failure(let error) = initialised { throw error }
    }

    /// Whether this libcurl was built with HTTP/2 (nghttp2).
    static var supportsHTTP2: Bool {
        guard let info = ccurl_version_info_now() else { return false }
        return info.pointee.features & CURL_VERSION_HTTP2 != 0
    }

    /// `libcurl/7.88.1 OpenSSL/3.0 nghttp2/1.52.0`-style version string.
    static var version: String { String(cString: curl_version()) }

    /// Maps a failed transfer's code to a retry class. Connection-level failures mean no response arrived, so
    /// re-sending cannot duplicate an answered notification.
    static func classify(_ code: CURLcode) -> APNsTransportError.Kind {
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING,
            CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_SSL_CONNECT_ERROR, CURLE_PARTIAL_FILE,
            CURLE_AGAIN:
            return .connection
        default:
            return .fatal
        }
    }
}
