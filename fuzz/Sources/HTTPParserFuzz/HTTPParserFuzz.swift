import FuzzSupport
import HTTPServer

/// One libFuzzer input: the first two bytes pick the read sizes, the body limit and the parser's limits, the rest is
/// what a client sent. The bytes go through `RequestParser` twice, in pieces and whole.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzHTTPParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let input = FuzzInput(data, size, controlBytes: 2) else { return 0 }
    let control = (input.control[0], input.control[1])
    let bytes = input.bytes
    // Read sizes 1...16 (cycled from the control byte's bits), as a slow or hostile client delivers them.
    let sizes = [Int(control.0 & 0x0F) + 1, Int(control.0 >> 4) + 1]
    // Bodies up to 0 B, 16 B, 1 KiB or the server's 1 MiB: the small ones reach the too-large paths.
    let bodyLimit = [0, 16, 1024, 1 << 20][Int(control.1 & 3)]
    // The server's limits, or small ones (as MutationFuzzTests uses) that inputs of a few hundred bytes reach.
    let limits = control.1 & 4 == 0 ? RequestParser.Limits()
        : RequestParser.Limits(maxRequestLineBytes: 64, maxHeaderBytes: 256, maxHeaderCount: 8, maxChunkLineBytes: 32)
    let split = ParserRun(bytes, sizes: sizes, bodyLimit: bodyLimit, limits: limits)
    let whole = ParserRun(bytes, sizes: [bytes.count], bodyLimit: bodyLimit, limits: limits)
    // Where TCP happens to split the stream must never change what the server understood.
    if split.verdict != whole.verdict {
        fatalError("split \(sizes) gave \(split.verdict), whole gave \(whole.verdict)")
    }
    return 0
}

/// Drives a parser the way the connection state machine does (`beginBody` after each head) and records what it
/// produced as text, so that two runs compare with `==`.
struct ParserRun {
    var verdict: [String] = []

    init(_ bytes: [UInt8], sizes: [Int], bodyLimit: Int, limits: RequestParser.Limits) {
        var parser = RequestParser(limits: limits)
        var offset = 0
        var turn = 0
        while offset < bytes.count {
            let size = max(1, min(bytes.count - offset, sizes[turn % sizes.count]))
            turn += 1
            parser.append(Array(bytes[offset..<offset + size]))
            offset += size
            guard drain(&parser, bodyLimit: bodyLimit) else { return }
        }
    }

    private mutating func drain(_ parser: inout RequestParser, bodyLimit: Int) -> Bool {
        while true {
            switch parser.next() {
            case .needMoreData:
                return true
            case .head(let head):
                verdict.append("head \(head.method) \(head.target) 1.\(head.minorVersion) \(head.headers) "
                               + "\(head.framing) keep-alive \(head.keepAlive)")
                if parser.beginBody(limit: bodyLimit) == .tooLarge {
                    verdict.append("too large")
                    return false
                }
            case .body(let body, let trailers):
                verdict.append("body \(body.count) \(body.hashValue) \(trailers)")
            case .error(let error):
                verdict.append("error \(error)")
                return false
            }
        }
    }
}
