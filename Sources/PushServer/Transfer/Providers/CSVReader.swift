/// A strict RFC 4180 reader: records of comma-separated fields, ended by CRLF (a bare LF is accepted too); a field
/// in double quotes may hold commas, line breaks and quotes doubled (`""`). Reads the stream in chunks, so a file
/// of any size is read in the memory of one chunk and one record. Strict: a quote inside an unquoted field, or
/// anything but a comma or a line end after a closing quote, makes the record bad (reported with its line, the
/// reader goes on at the next line end outside quotes); a quote left open at the end of the file is bad too.
/// A UTF-8 byte-order mark before the first record is skipped.
package struct CSVReader {
    /// One record: the line it starts on (1-based) and its fields, or why it cannot be read.
    package struct Record: Equatable {
        package var line: Int
        package var fields: Result<[String], Problem>
    }

    package struct Problem: Error, Equatable {
        package var reason: String
    }

    private let nextChunk: () throws -> [UInt8]?
    private var chunk: [UInt8] = []
    private var position = 0
    private var ended = false
    private var line = 1
    private var atStart = true
    package let maxRecordBytes: Int

    package init(maxRecordBytes: Int = 1 << 20, nextChunk: @escaping () throws -> [UInt8]?) {
        self.maxRecordBytes = maxRecordBytes
        self.nextChunk = nextChunk
    }

    private mutating func nextByte() throws -> UInt8? {
        if position == chunk.count {
            guard !ended, let more = try nextChunk(), !more.isEmpty else {
                ended = true
                return nil
            }
            chunk = more
            position = 0
        }
        position += 1
        return chunk[position - 1]
    }

    private mutating func peek() throws -> UInt8? {
        guard let byte = try nextByte() else { return nil }
        position -= 1
        return byte
    }

    /// The next record, nil at the end of the file. An empty line is an empty record with one empty field.
    package mutating func next() throws -> Record? {
        if atStart {
            atStart = false
            if try peek() == 0xEF {
                position += 1
                guard try nextByte() == 0xBB, try nextByte() == 0xBF else {
                    return Record(line: 1, fields: .failure(Problem(reason: "the file is not UTF-8 text")))
                }
            }
        }
        guard try peek() != nil else { return nil }
        let start = line
        var fields: [String] = []
        var field: [UInt8] = []
        var size = 0
        var problem: String?
        // States: at a field's start, in an unquoted field, in a quoted one, just after a closing quote.
        enum State { case fieldStart, unquoted, quoted, afterQuote }
        var state = State.fieldStart
        func finishField() {
            fields.append(String(decoding: field, as: UTF8.self))
            field.removeAll(keepingCapacity: true)
        }
        while true {
            guard let byte = try nextByte() else {
                if state == .quoted {
                    problem = problem ?? "a quoted field opened here is not closed before the end of the file"
                }
                break
            }
            size += 1
            if size > maxRecordBytes { problem = problem ?? "the record is longer than \(maxRecordBytes) bytes" }
            if byte == UInt8(ascii: "\n") { line += 1 }
            switch state {
            case .quoted:
                if byte == UInt8(ascii: "\"") {
                    if try peek() == UInt8(ascii: "\"") {
                        position += 1
                        field.append(byte)
                    } else {
                        state = .afterQuote
                    }
                } else if problem == nil {
                    field.append(byte)
                }
                continue
            case .fieldStart, .unquoted, .afterQuote:
                break
            }
            let crlf = try byte == UInt8(ascii: "\r") && peek() == UInt8(ascii: "\n")
            if byte == UInt8(ascii: "\n") || crlf {
                if byte == UInt8(ascii: "\r") {
                    position += 1
                    line += 1
                }
                break
            }
            if problem != nil { continue }
            switch (state, byte) {
            case (_, UInt8(ascii: ",")):
                finishField()
                state = .fieldStart
            case (.fieldStart, UInt8(ascii: "\"")):
                state = .quoted
            case (.afterQuote, _):
                problem = "field \(fields.count + 1): only a comma or a line end may follow a closing quote"
            case (_, UInt8(ascii: "\"")):
                problem =
                    "field \(fields.count + 1): a quote inside an unquoted field (quote the field and double the quote)"
            case (_, UInt8(ascii: "\r")):
                problem = "field \(fields.count + 1): a carriage return outside quotes not followed by a line feed"
            default:
                field.append(byte)
                state = .unquoted
            }
        }
        if let problem { return Record(line: start, fields: .failure(Problem(reason: problem))) }
        finishField()
        return Record(line: start, fields: .success(fields))
    }
}
