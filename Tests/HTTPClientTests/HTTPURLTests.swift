import XCTest

@testable import HTTPClient

final class HTTPURLTests: XCTestCase {
    func testAcceptsHTTPAndHTTPSWithDefaultPortsAndRedactsCredentials() throws {
        let url = try HTTPURL("http://hookuser:s3cret@Hooks.Example.com/beams?token=abc")
        XCTAssertEqual(url.scheme, "http")
        XCTAssertEqual(url.host, "hooks.example.com")
        XCTAssertEqual(url.port, 80)
        XCTAssertEqual(url.redacted, "http://hooks.example.com:80")
        XCTAssertFalse("\(url)".contains("s3cret"))
        XCTAssertEqual(try HTTPURL("HTTPS://example.com").port, 443)
        // curl reads a third slash leniently; what matters is that the host checked is the host requested.
        XCTAssertEqual(try HTTPURL("http:///path").host, "path")
        let literal = try HTTPURL("https://[::1]:8443/x")
        XCTAssertEqual(literal.host, "[::1]")
        XCTAssertEqual(literal.port, 8443)
        XCTAssertEqual(literal.literalAddress, IPAddress("::1"))
        XCTAssertEqual(try HTTPURL("http://10.0.0.1/").literalAddress, IPAddress(10, 0, 0, 1))
        XCTAssertNil(url.literalAddress)
    }

    func testRefusesOtherSchemes() {
        for text in [
            "ftp://example.com/x", "file:///etc/passwd", "gopher://127.0.0.1:6379/_INFO", "dict://x:11211/",
            "ldap://x", "javascript:alert(1)", "smb://x/y",
        ] {
            XCTAssertThrowsError(try HTTPURL(text), text) { error in
                XCTAssertEqual(error as? HTTPURL.ParseError, .unsupportedScheme, text)
            }
        }
    }

    func testRefusesMalformedURLs() {
        for text in [
            "", "example.com/hook", "http://", "http://a:b@c@d/x", "http://exa mple.com/", "http://example.com:99999/",
            "http://example.com:port/", "http://[::1/", "http://a\r\nHost: b/", " http://example.com",
        ] {
            XCTAssertThrowsError(try HTTPURL(text), text)
        }
        XCTAssertThrowsError(try HTTPURL("http://example.com/" + String(repeating: "a", count: HTTPURL.maxLength))) {
            error in
            XCTAssertEqual(error as? HTTPURL.ParseError, .tooLong)
        }
    }

    func testDurationsBecomeWholeMillisecondsWithoutTrapping() {
        XCTAssertEqual(Duration.seconds(3).curlMilliseconds, 3000)
        XCTAssertEqual(Duration.milliseconds(1.5).curlMilliseconds, 2)
        XCTAssertEqual(Duration.zero.curlMilliseconds, 1)
        XCTAssertEqual(Duration.seconds(-5).curlMilliseconds, 1)
        XCTAssertEqual(Duration.seconds(Int64.max).curlMilliseconds, Int(Int32.max))
    }
}
