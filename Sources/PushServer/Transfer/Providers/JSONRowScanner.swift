/// Splits a JSON export into its rows without reading it whole, so a file of any size is read in the memory of one
/// chunk and one row. A row is an object that is: a top-level value (NDJSON, mongoexport's default, or objects
/// simply concatenated), an element of a top-level array (`mongoexport --jsonArray`, the Parse Dashboard's JSON),
/// or an element of an array member of a top-level object (`{"results":[…]}` from Parse's REST API,
/// `{"Endpoints":[…]}` from `aws sns list-endpoints-by-platform-application`). A top-level object is a container
/// once one of its array members holds an object, and a row otherwise. Only brackets and strings are tracked: a
/// row's own JSON is judged by the parser later, where a bad one is refused alone.
package struct JSONRowScanner {
    private let nextChunk: () throws -> [UInt8]?
    private var chunk: [UInt8] = []
    private var position = 0
    private var ended = false
    /// Open brackets, outermost first.
    private var stack: [UInt8] = []
    private var inString = false
    private var escaped = false
    private var line = 1
    /// The row being read: its bytes, the line it starts on, the stack depth it opened at.
    private var row: [UInt8] = []
    private var rowLine = 0
    private var rowDepth = -1
    private var rowTooLong = false
    package let maxRowBytes: Int

    package init(maxRowBytes: Int = 1 << 20, nextChunk: @escaping () throws -> [UInt8]?) {
        self.maxRowBytes = maxRowBytes
        self.nextChunk = nextChunk
    }

    /// The next row's bytes and the line it starts on; `tooLong` when it passed `maxRowBytes` (its bytes are then
    /// cut). - Throws: `ProviderFileError` for bytes that cannot be JSON rows, or the reader's error.
    package mutating func next() throws -> (line: Int, bytes: [UInt8], tooLong: Bool)? {
        while true {
            if position == chunk.count {
                guard !ended, let more = try nextChunk(), !more.isEmpty else {
                    ended = true
                    if !stack.isEmpty || inString {
                        throw ProviderFileError(
                            description: "the JSON ends inside a value opened on or before line \(line)")
                    }
                    return nil
                }
                chunk = more
                position = 0
            }
            let byte = chunk[position]
            position += 1
            if rowDepth >= 0 {
                if row.count < maxRowBytes { row.append(byte) } else { rowTooLong = true }
            }
            if byte == UInt8(ascii: "\n") { line += 1 }
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                guard !stack.isEmpty else { throw stray(byte) }
                inString = true
            case UInt8(ascii: "{"):
                let rowPlace =
                    stack.isEmpty || stack == [UInt8(ascii: "[")] || stack == [UInt8(ascii: "{"), UInt8(ascii: "[")]
                // rowDepth 0 here: the top-level object holds an array of objects, so it was a container.
                if rowPlace && (rowDepth < 0 || (rowDepth == 0 && stack.count == 2)) {
                    row = [byte]
                    rowLine = line
                    rowDepth = stack.count
                    rowTooLong = false
                }
                stack.append(byte)
            case UInt8(ascii: "["):
                stack.append(byte)
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard let open = stack.popLast(),
                    open == (byte == UInt8(ascii: "}") ? UInt8(ascii: "{") : UInt8(ascii: "["))
                else {
                    throw ProviderFileError(
                        description: "line \(line): `\(Character(Unicode.Scalar(byte)))` closes nothing open")
                }
                if rowDepth == stack.count {
                    let finished = (rowLine, row, rowTooLong)
                    row = []
                    rowDepth = -1
                    return finished
                }
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"), UInt8(ascii: "\n"):
                continue
            default:
                // Numbers, literals, commas and colons inside a value; at the top level only commas (tolerated
                // between concatenated rows) and a byte-order mark.
                if stack.isEmpty, byte != UInt8(ascii: ","), ![0xEF, 0xBB, 0xBF].contains(byte) || line > 1 {
                    throw stray(byte)
                }
            }
        }
    }

    private func stray(_ byte: UInt8) -> ProviderFileError {
        ProviderFileError(
            description: "line \(line): byte 0x\(String(byte, radix: 16)) outside any JSON value; "
                + "expected rows as JSON objects")
    }
}
