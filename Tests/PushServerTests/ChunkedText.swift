/// A reader's `nextChunk` over `text` (`CSVReader`, `JSONRowScanner`): `size` bytes a call, then nil for the end of
/// the file, so a test puts chunk boundaries wherever it wants them.
func chunks(of text: String, size: Int) -> () -> [UInt8]? {
    var bytes = ArraySlice(Array(text.utf8))
    return {
        guard !bytes.isEmpty else { return nil }
        let chunk = Array(bytes.prefix(size))
        bytes = bytes.dropFirst(size)
        return chunk
    }
}
