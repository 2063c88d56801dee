// HTTPBench: serves `GET /health` → {"status":"ok"} and `POST /echo` (JSON echo through the JSON target's
// parser and serializer) through the HTTPServer Router, for `bench/http/run.sh` to load with wrk.
//
// Usage: HTTPBench [--port N] [--loops N] [--seconds N] [--tls-cert PEM --tls-key PEM]
//   Stops by itself after --seconds (default 60) so a benchmark can never leave it running.
import Foundation
import HTTPServer
import JSON
import Logging

var port = 8081
var loops: Int? = nil
var seconds = 60.0
var certificate: String?
var key: String?
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--port": port = Int(arguments.next() ?? "") ?? port
    case "--loops": loops = Int(arguments.next() ?? "")
    case "--seconds": seconds = Double(arguments.next() ?? "") ?? seconds
    case "--tls-cert": certificate = arguments.next()
    case "--tls-key": key = arguments.next()
    default:
        print("unknown argument \(argument)")
        exit(2)
    }
}

var router = Router()
let ok = Array(#"{"status":"ok"}"#.utf8)
router.get("/health") { _ in .json(raw: ok) }
router.post("/echo", bodyLimit: BodyLimit(maxBytes: 10 * 1024)) { request in
    // Parse and re-encode, as a real JSON route would.
    .json(try request.jsonBody())
}

let logger = Logger(label: "http", level: .warning)
let tls = certificate.flatMap { c in key.map { TLSConfiguration(certificateChainPath: c, privateKeyPath: $0) } }
let server = HTTPServer(
    configuration: HTTPServerConfiguration(host: "127.0.0.1", port: port, tls: tls, eventLoopCount: loops),
    router: router, logger: logger)
let bound = try server.start()
print("HTTPBench listening on 127.0.0.1:\(bound) loops=\(server.configuration.eventLoopCount) tls=\(tls != nil)")
fflush(nil)
Thread.sleep(forTimeInterval: seconds)
let done = DispatchSemaphore(value: 0)
Task {
    await server.shutdown()
    done.signal()
}
done.wait()
print("HTTPBench stopped after \(seconds) s; requests=\(server.completedRequests)")
