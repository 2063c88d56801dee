import Foundation
import HTTPServer
import TestSupport
import XCTest

/// Randomized mutations of valid requests: byte flips, truncations, insertions, deletions, duplications, and
/// random read sizes. The parser must never crash or loop; the server must answer or close cleanly, in bounded
/// time, and keep serving.
final class MutationFuzzTests: XCTestCase {
    static let corpus: [[UInt8]] = [
        "GET /health HTTP/1.1\r\nHost: h\r\nAccept: */*\r\nUser-Agent: fuzz\r\n\r\n",
        "POST /echo HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"a\":[1,2,3]}",
        "POST /echo HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nwiki\r\n5\r\npedia\r\n0\r\nT: v\r\n\r\n",
        "GET /items/a%20b?q=x+y HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\nGET /users/a/b HTTP/1.1\r\nHost: h\r\n\r\n",
        "POST /publish HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\nhello",
        "GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
    ].map { Array($0.utf8) }

    static let interesting: [UInt8] = Array("\r\n :;,=%0123456789abcdefABCDEF\t\0".utf8) + [0x7F, 0xFF, 0x80]

    static func mutate(_ input: [UInt8], _ rng: inout SplitMix64) -> [UInt8] {
        var bytes = input
        let rounds = Int.random(in: 1...4, using: &rng)
        for _ in 0..<rounds where !bytes.isEmpty {
            let i = Int.random(in: 0..<bytes.count, using: &rng)
            switch Int.random(in: 0..<7, using: &rng) {
            case 0: bytes[i] = UInt8.random(in: 0...255, using: &rng)
            case 1: bytes[i] = interesting.randomElement(using: &rng)!
            case 2: bytes.removeSubrange(i...)  // truncation
            case 3: bytes.insert(interesting.randomElement(using: &rng)!, at: i)
            case 4:
                let n = Int.random(in: 1...min(16, bytes.count - i), using: &rng)
                bytes.removeSubrange(i..<i + n)
            case 5:
                let n = Int.random(in: 1...min(32, bytes.count - i), using: &rng)
                bytes.insert(contentsOf: bytes[i..<i + n], at: i)
            default:
                bytes.insert(
                    contentsOf: (0..<Int.random(in: 1...8, using: &rng)).map { _ in
                        UInt8.random(in: 0...255, using: &rng)
                    }, at: i)
            }
        }
        return bytes
    }

    func testParserSurvivesThousandsOfMutatedRequests() {
        var rng = SplitMix64(seed: 0x5EED_0001)
        let allowed: Set<Int> = [400, 413, 414, 417, 431, 501, 505]
        let limits = RequestParser.Limits(maxRequestLineBytes: 256, maxHeaderBytes: 1024, maxHeaderCount: 20)
        for iteration in 0..<20_000 {
            let base = Self.corpus.randomElement(using: &rng)!
            let mutated = Self.mutate(base, &rng)
            let sizes = (0..<4).map { _ in Int.random(in: 1...32, using: &rng) }
            let outcome = parse(mutated, bodyLimit: 1024, limits: limits, chunkSizes: sizes)
            if let status = outcome.status {
                XCTAssertTrue(allowed.contains(status), "iteration \(iteration): unexpected status \(status)")
            }
            XCTAssertLessThanOrEqual(outcome.heads.count, 4, "iteration \(iteration)")
            // Same bytes fed at once give the same verdict: splitting must never change the parse.
            let whole = parse(mutated, bodyLimit: 1024, limits: limits)
            XCTAssertEqual(whole.status, outcome.status, "iteration \(iteration)")
            XCTAssertEqual(whole.bodies, outcome.bodies, "iteration \(iteration)")
            if whole.status != outcome.status { return }
        }
    }

    func testServerAnswersOrClosesEveryMutatedRequestWithinBound() throws {
        let server = try TestServer()
        defer { server.stop() }
        var rng = SplitMix64(seed: 0xF022_2026)
        var answered = 0
        var closedSilently = 0
        for iteration in 0..<2_000 {
            let base = Self.corpus.randomElement(using: &rng)!
            let mutated = Self.mutate(base, &rng)
            let client = try server.client(timeout: 3)
            var offset = 0
            var sendFailed = false
            while offset < mutated.count {
                let n = min(mutated.count - offset, Int.random(in: 1...64, using: &rng))
                do {
                    try client.send(Array(mutated[offset..<offset + n]))
                } catch {
                    sendFailed = true  // the server already answered and closed: fine
                    break
                }
                offset += n
            }
            if !sendFailed { client.shutdownWrite() }
            do {
                let rest = try client.readUntilClose()
                if rest.isEmpty {
                    closedSilently += 1
                } else {
                    answered += 1
                    XCTAssertTrue(
                        rest.starts(with: Array("HTTP/1.1 ".utf8)), "iteration \(iteration): not an HTTP response")
                }
            } catch {
                XCTFail(
                    "iteration \(iteration): no response or close within 3 s (\(error)); input \(String(decoding: mutated, as: UTF8.self).debugDescription)"
                )
                return
            }
            client.close()
            if iteration % 250 == 0 { server.assertHealthy() }
        }
        server.assertHealthy()
        XCTAssertGreaterThan(answered, 500)
        print("mutation test: \(answered) answered, \(closedSilently) closed without a response")
    }
}
