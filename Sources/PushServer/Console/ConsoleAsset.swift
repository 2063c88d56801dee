extension ConsoleAssets {
    /// One embedded file with its exact content type (the page is served with `nosniff`) and a content hash for
    /// revalidation.
    struct Asset: Sendable {
        /// The file's name under `console/` in the repository.
        let path: String
        let contentType: String
        let bytes: [UInt8]
        /// A strong ETag: FNV-1a 64 of the bytes, which is enough to tell two versions of a file apart.
        let etag: String

        init(path: String, contentType: String, bytes: [UInt8]) {
            self.path = path
            self.contentType = contentType
            self.bytes = bytes
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            let hex = String(hash, radix: 16)
            etag = "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
        }

        init(path: String, contentType: String, text: String) {
            self.init(path: path, contentType: contentType, bytes: Array(text.utf8))
        }
    }
}
