// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The build tool behind `ConsoleAssetsPlugin`: writes `enum ConsoleAssets` with one `Asset` per console file.
/// Arguments: the output path, then for each file its kind (`text` or `bytes`), Swift name, path and content type.
/// Text becomes a raw multi-line string literal (the compiler takes those quickly; a large array literal it does
/// not), the favicon a byte array. Only the C library: the tool is compiled on every clean build, so it stays small.
@main
struct ConsoleAssetsGenerator {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let output = arguments.first, (arguments.count - 1) % 4 == 0, arguments.count > 1 else {
            fail("usage: ConsoleAssetsGenerator OUTPUT (text|bytes NAME PATH CONTENT-TYPE)...")
        }
        var declarations: [String] = []
        var literals: [String] = []
        for start in stride(from: 1, to: arguments.count, by: 4) {
            let (kind, name, path, contentType) =
                (arguments[start], arguments[start + 1], arguments[start + 2], arguments[start + 3])
            let file = String(path.split(separator: "/").last ?? Substring(path))
            let bytes = readFile(path)
            guard kind == "text" || kind == "bytes" else { fail("unknown kind \(kind) (text or bytes)") }
            let content = kind == "text" ? "text: \(name)Text" : "bytes: \(name)Bytes"
            declarations.append(
                "    static let \(name) = Asset(path: \"\(file)\", contentType: \"\(contentType)\", \(content))")
            if kind == "text" {
                literals.append("    private static let \(name)Text = \(rawLiteral(bytes, path: path))\n")
            } else {
                literals.append("    private static let \(name)Bytes: [UInt8] = [")
                for row in stride(from: 0, to: bytes.count, by: 16) {
                    let line = bytes[row..<min(row + 16, bytes.count)].map { hex($0) }.joined(separator: ", ")
                    literals.append("        \(line),")
                }
                literals.append("    ]")
            }
        }
        let source =
            [
                "// Generated at build time by Plugins/ConsoleAssetsGenerator from console/*: the files in console/ are the",
                "// one copy; this file exists only in the build directory.",
                "",
                "/// The console's files, compiled into the binary.",
                "enum ConsoleAssets {",
            ] + declarations + [""] + literals + ["}"]
        writeFile(source.joined(separator: "\n") + "\n", to: output)
    }

    /// A raw multi-line literal that reads back as exactly `bytes`: the closing delimiter sits in column 0 so no
    /// indentation is stripped, the blank line before it keeps the file's final newline, and the delimiter has as
    /// many `#` as it takes for no `"""#…` or `\#…` in the text to end the literal or start an escape.
    static func rawLiteral(_ bytes: [UInt8], path: String) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        guard Array(text.utf8) == bytes else { fail("\(path) is not UTF-8") }
        // The compiler normalises line endings inside a multi-line literal, so a CR would not survive.
        guard !bytes.contains(13) else { fail("\(path) contains a carriage return; save it with LF line endings") }
        var hashes = "#"
        while text.contains("\"\"\"" + hashes) || text.contains("\\" + hashes) { hashes += "#" }
        return hashes + "\"\"\"\n" + text + "\n\"\"\"" + hashes
    }

    static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "0x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 0x0f)])
    }

    static func readFile(_ path: String) -> [UInt8] {
        guard let file = fopen(path, "rb") else { fail("cannot open \(path)") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            bytes += chunk[0..<count]
            if count < chunk.count { break }
        }
        guard ferror(file) == 0 else { fail("cannot read \(path)") }
        return bytes
    }

    static func writeFile(_ text: String, to path: String) {
        guard let file = fopen(path, "wb") else { fail("cannot create \(path)") }
        let bytes = Array(text.utf8)
        let written = fwrite(bytes, 1, bytes.count, file)
        guard fclose(file) == 0, written == bytes.count else { fail("cannot write \(path)") }
    }

    static func fail(_ message: String) -> Never {
        let line = Array("ConsoleAssetsGenerator: \(message)\n".utf8)
        _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }  // stderr: not a global var under Swift 6
        exit(1)
    }
}
