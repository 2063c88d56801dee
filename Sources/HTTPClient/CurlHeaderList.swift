import CLibCurl

/// Owns one `curl_slist` of request header lines (`Name: value`), freed with the object.
///
/// curl does not copy `CURLOPT_HTTPHEADER`: keep the list alive while any handle uses it, and unset the option
/// before the list goes away.
package final class CurlHeaderList {
    /// The list for `CURLOPT_HTTPHEADER`.
    package let pointer: UnsafeMutablePointer<curl_slist>

    /// Builds the list in order.
    /// - Throws: `CurlError` when `lines` is empty, a line contains CR, LF or NUL (it would split into another
    ///   header: request smuggling), or curl is out of memory.
    package init(_ lines: [String]) throws(CurlError) {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines {
            // Over the contiguous bytes when the string has them (a native string does): the UTF-8 view's iterator
            // cost about 8,000 instructions per APNs list (a 250-byte bearer token among its lines; callgrind).
            let splits =
                line.utf8.withContiguousStorageIfAvailable { $0.contains(where: Self.splitsLine) }
                ?? line.utf8.contains(where: Self.splitsLine)
            guard !splits else {
                if let list { curl_slist_free_all(list) }
                throw CurlError(code: -1, call: "curl_slist_append", message: "header line contains CR, LF or NUL")
            }
            guard let appended = curl_slist_append(list, line) else {
                if let list { curl_slist_free_all(list) }
                throw .outOfMemory("curl_slist_append")
            }
            list = appended
        }
        guard let list else { throw CurlError(code: -1, call: "curl_slist_append", message: "no header lines") }
        pointer = list
    }

    /// CR, LF and NUL end a header line early.
    @inline(__always)
    private static func splitsLine(_ byte: UInt8) -> Bool { byte == 0x0D || byte == 0x0A || byte == 0 }

    deinit { curl_slist_free_all(pointer) }
}

@available(*, unavailable, message: "owned by the thread that owns the easy handles using it")
extension CurlHeaderList: Sendable {}
