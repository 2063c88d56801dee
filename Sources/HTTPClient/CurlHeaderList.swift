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
            guard !line.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A || $0 == 0 }) else {
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

    deinit { curl_slist_free_all(pointer) }
}

@available(*, unavailable, message: "owned by the thread that owns the easy handles using it")
extension CurlHeaderList: Sendable {}
