import FuzzSupport
import JSON

/// One libFuzzer input: the bytes as a request body, parsed with the server's limits.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let input = FuzzInput(data, size, controlBytes: 0), let value = JSONValue.parse(input.bytes) else { return 0 }
    // Whatever parses must serialize and parse back to the same value (the writer is the parser's inverse).
    let text = value.serialized()
    guard let again = JSONValue.parse(text), again == value else {
        fatalError("round trip changed \(value.jsonText) into \(String(decoding: text, as: UTF8.self))")
    }
    return 0
}
