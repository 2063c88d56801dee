import CLibCurl
import HTTPClient
import XCTest

@testable import APNsClient

final class CurlClassificationTests: XCTestCase {
    func testConnectionLevelFailuresAreRetryableAndTLSVerificationIsFatal() {
        for code in [
            CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING,
            CURLE_COULDNT_CONNECT,
        ] {
            XCTAssertEqual(CurlGlobal.classify(code), .connection, "\(code)")
        }
        XCTAssertEqual(CurlGlobal.classify(CURLE_OPERATION_TIMEDOUT), .timeout)
        for code in [
            CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_URL_MALFORMAT,
            CURLE_UNSUPPORTED_PROTOCOL,
        ] {
            XCTAssertEqual(CurlGlobal.classify(code), .fatal, "\(code)")
        }
    }

    func testLibcurlHasHTTP2() throws {
        try CurlGlobal.ensureInitialised()
        XCTAssertTrue(CurlGlobal.supportsHTTP2, CurlGlobal.version)
    }
}
