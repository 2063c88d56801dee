/// A response's status line as curl's header callback hands it over (`HTTP/2 200 \r\n`): the one reader for the
/// transfers that watch their response headers (`HTTPExchangeTransfer`, and `APNsTransfer` in APNsClient).
package enum HTTPStatusLine {
    /// The status code when `line` is a status line (which starts a new response, an interim one included): the
    /// three digits after the first space, or 0 when they are not three digits. nil for any other header line.
    package static func code(of line: UnsafeBufferPointer<UInt8>) -> Int? {
        guard line.count >= 5, line[0] == UInt8(ascii: "H"), line[1] == UInt8(ascii: "T") else { return nil }
        guard let space = line.firstIndex(of: 0x20), line.count - space > 3 else { return 0 }
        var code = 0
        for byte in line[(space + 1)...(space + 3)] {
            guard byte >= 0x30 && byte <= 0x39 else { return 0 }
            code = code * 10 + Int(byte - 0x30)
        }
        return code
    }
}
