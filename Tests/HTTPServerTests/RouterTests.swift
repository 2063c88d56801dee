import XCTest

@testable import HTTPServer

final class RouterTests: XCTestCase {
    private func router(_ patterns: [(HTTPMethod, String)]) -> Router {
        var r = Router()
        for (method, pattern) in patterns {
            r.add(method, pattern) { _ in .text(pattern) }
        }
        return r
    }

    private func resolve(_ r: Router, _ method: HTTPMethod, _ target: String) -> (String, [String: String])? {
        let (path, _) = PercentDecoding.split(target: target)
        guard let segments = PercentDecoding.segments(path: path),
            case .found(let route, let parameters) = r.match(method, segments)
        else { return nil }
        return (route.pattern, parameters)
    }

    func testLiteralPathShortcutAgreesWithTheTreeWalk() {
        let r = router([
            (.get, "/health"), (.post, "/health"), (.get, "/items/:id"), (.get, "/items/new"),
            (.put, "/a/b"), (.get, "/a/:x"), (.get, "/"), (.get, "/files/*rest"), (.delete, "/files/x"),
            (.get, "/x//y"),
        ])
        let cases: [(HTTPMethod, String)] = [
            (.get, "/health"), (.head, "/health"), (.post, "/health"), (.put, "/health"), (.get, "/items/new"),
            (.get, "/items/7"), (.put, "/a/b"), (.get, "/a/b"), (.get, "/"), (.get, "/files/x"), (.delete, "/files/x"),
            (.get, "/x//y"), (.get, "/health/"), (.get, "/heal%74h"), (.get, "/nope"),
        ]
        for (method, target) in cases {
            let (path, _) = PercentDecoding.split(target: target)
            let walked = resolve(r, method, target)
            if let shortcut = r.route(method, literalPath: path) {
                // Where the shortcut answers, it is the route the tree walk finds, with no parameters.
                XCTAssertEqual(shortcut.pattern, walked?.0, "\(method) \(target)")
                XCTAssertEqual(walked?.1, [:], "\(method) \(target)")
            }
        }
        XCTAssertEqual(r.route(.get, literalPath: "/health")?.pattern, "/health")
        XCTAssertEqual(r.route(.head, literalPath: "/health")?.pattern, "/health", "HEAD is served by GET")
        XCTAssertNil(r.route(.put, literalPath: "/health"), "no PUT route: the tree walk decides (405)")
        XCTAssertNil(r.route(.get, literalPath: "/a/b"), "GET /a/b is /a/:x's: the tree walk finds it")
        XCTAssertEqual(resolve(r, .get, "/a/b")?.0, "/a/:x")
        XCTAssertNil(r.route(.get, literalPath: "/heal%74h"), "escapes are decoded by the tree walk")
        XCTAssertNil(r.route(.get, literalPath: "/items/7"))
    }

    func testMatchesParametersAndDecodesThem() {
        let r = router([(.put, "/device_api/v1/instances/:instance/devices/apns/:device")])
        let found = resolve(r, .put, "/device_api/v1/instances/abc-123/devices/apns/d%20e%2Ff")
        XCTAssertEqual(found?.0, "/device_api/v1/instances/:instance/devices/apns/:device")
        XCTAssertEqual(found?.1, ["instance": "abc-123", "device": "d e/f"])
    }

    func testRestParameterJoinsRemainingDecodedSegments() {
        let r = router([(.delete, "/customer_api/v1/instances/:instance/users/*userId")])
        let found = resolve(r, .delete, "/customer_api/v1/instances/i1/users/alice%40x/b%2Fc/d;e=f")
        XCTAssertEqual(found?.1["userId"], "alice@x/b/c/d;e=f")
        XCTAssertEqual(found?.1["instance"], "i1")
        XCTAssertNil(resolve(r, .delete, "/customer_api/v1/instances/i1/users"))
    }

    func testMatrixLikeCharactersAreOrdinary() {
        let r = router([(.get, "/items/:id")])
        XCTAssertEqual(resolve(r, .get, "/items/a;b=c,d@e")?.1["id"], "a;b=c,d@e")
    }

    func testEncodedSlashStaysInsideSegment() {
        let r = router([(.get, "/items/:id"), (.get, "/items/:id/sub")])
        XCTAssertEqual(resolve(r, .get, "/items/a%2Fsub")?.0, "/items/:id")
        XCTAssertEqual(resolve(r, .get, "/items/a%2Fsub")?.1["id"], "a/sub")
    }

    func testLiteralBeatsParameterAndFallsBackWhenMethodDiffers() {
        let r = router([(.get, "/a/:x"), (.post, "/a/b")])
        XCTAssertEqual(resolve(r, .post, "/a/b")?.0, "/a/b")
        XCTAssertEqual(resolve(r, .get, "/a/b")?.0, "/a/:x")
    }

    func testReportsMethodNotAllowedWithAllowList() {
        let r = router([(.get, "/a"), (.post, "/a"), (.put, "/b")])
        guard case .methodNotAllowed(let allow) = r.match(.delete, ["a"]) else { return XCTFail("expected 405") }
        XCTAssertEqual(allow, ["GET", "HEAD", "POST"])
    }

    func testHeadUsesGetRoute() {
        let r = router([(.get, "/a")])
        XCTAssertEqual(resolve(r, .head, "/a")?.0, "/a")
    }

    func testNotFoundForUnknownPathsAndTrailingSlash() {
        let r = router([(.get, "/a/b")])
        guard case .notFound = r.match(.get, ["a"]) else { return XCTFail("expected 404") }
        XCTAssertNil(resolve(r, .get, "/a/b/"))
        XCTAssertNil(resolve(r, .get, "/a/c"))
    }

    func testParameterDoesNotMatchEmptySegment() {
        let r = router([(.get, "/a/:x")])
        XCTAssertNil(resolve(r, .get, "/a/"))
    }

    func testInvalidPercentEncodingIsRejected() {
        XCTAssertNil(PercentDecoding.segments(path: "/a/%zz"))
        XCTAssertNil(PercentDecoding.segments(path: "/a/%4"))
        XCTAssertNil(PercentDecoding.segments(path: "/a/%ff%fe"), "invalid UTF-8")
    }

    func testQueryDecodingTurnsPlusIntoSpaceOnlyInQuery() {
        let (path, query) = PercentDecoding.split(target: "/a+b?x=1+2&y=%2B&z&x=3")
        XCTAssertEqual(PercentDecoding.segments(path: path), ["a+b"])
        let items = PercentDecoding.queryItems(query!)!
        XCTAssertEqual(items.map(\.name), ["x", "y", "z", "x"])
        XCTAssertEqual(items.map(\.value), ["1 2", "+", "", "3"])
    }

    func testAbsoluteFormTargetIsReducedToPath() {
        let (path, query) = PercentDecoding.split(target: "http://example.com:80/p/q?r=1")
        XCTAssertEqual(path, "/p/q")
        XCTAssertEqual(query, "r=1")
        XCTAssertEqual(PercentDecoding.split(target: "https://example.com").path, "/")
    }

    func testFragmentEndsPathOrQueryAndAFirstQuestionMarkSplits() {
        XCTAssertTrue(PercentDecoding.split(target: "/a/b#frag?x=1") == ("/a/b", nil))
        XCTAssertTrue(PercentDecoding.split(target: "/a?x=1#frag") == ("/a", "x=1"))
        XCTAssertTrue(PercentDecoding.split(target: "/a?x=?y#f#g") == ("/a", "x=?y"))
        XCTAssertTrue(PercentDecoding.split(target: "/a?") == ("/a", ""))
        XCTAssertTrue(PercentDecoding.split(target: "/") == ("/", nil))
        XCTAssertEqual(PercentDecoding.segments(path: "/x//y/"), ["x", "", "y", ""])
        XCTAssertEqual(PercentDecoding.segments(path: "/"), [""])
    }
}
