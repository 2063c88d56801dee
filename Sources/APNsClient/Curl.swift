import CLibCurl
import HTTPClient

extension CurlGlobal {
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
