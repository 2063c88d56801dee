/// Splits a byte stream into `\n`-terminated lines, reading it in chunks, so a file of any size is read in the
/// memory of one chunk and one line. A line longer than `maxLineBytes` is returned cut at that length, with
/// `truncated` set, and the rest of it skipped.
package struct LineSplitter {
    /// Gives the next chunk, or nil at the end of the stream.
    private let nextChunk: () throws -> [UInt8]?
    private var buffer: [UInt8] = []
    private var start = 0
    private var ended = false
    package let maxLineBytes: Int

    package init(maxLineBytes: Int, nextChunk: @escaping () throws -> [UInt8]?) {
        self.maxLineBytes = maxLineBytes
        self.nextChunk = nextChunk
    }

    /// The next line without its `\n`, nil at the end.
    package mutating func next() throws -> (bytes: ArraySlice<UInt8>, truncated: Bool)? {
        var truncated = false
        var searchFrom = start
        while true {
            if let newline = buffer[searchFrom...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = buffer[start..<min(newline, start + maxLineBytes)]
                start = newline + 1
                return (line, truncated || newline - line.startIndex > maxLineBytes)
            }
            if buffer.count - start > maxLineBytes {
                // Keep the first maxLineBytes + 1 bytes (enough to tell it is too long) and drop the rest as read.
                truncated = true
                buffer.removeSubrange((start + maxLineBytes + 1)...)
            }
            if ended {
                guard start < buffer.count else { return nil }
                let line = buffer[start..<min(buffer.count, start + maxLineBytes)]
                start = buffer.count
                return (line, truncated || buffer.count - line.startIndex > maxLineBytes)
            }
            if start > 0 {
                buffer.removeSubrange(..<start)
                start = 0
            }
            searchFrom = buffer.count
            if let chunk = try nextChunk(), !chunk.isEmpty {
                buffer.append(contentsOf: chunk)
            } else {
                ended = true
            }
        }
    }
}
