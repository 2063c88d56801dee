import JSON

/// A parsed HTTP/1.x response as read by `RawHTTPClient`.
package struct RawHTTPResponse: Sendable, CustomStringConvertible {
    package var status: Int
    package var reason: String
    package var version: String
    /// Header fields in arrival order, names as sent.
    package var headers: [(name: String, value: String)]
    package var body: [UInt8]

    /// First value of `name` (case-insensitive).
    package func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of `name` (case-insensitive).
    package func headerValues(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    package var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object, or nil.
    package var jsonObject: [String: JSONValue]? { JSONValue.parse(body)?.objectValue }

    /// Whether the server announced it will close the connection.
    package var closesConnection: Bool {
        headerValues("connection").contains { $0.lowercased().contains("close") }
    }

    package var description: String { "\(status) \(reason) \(headers.count) headers, \(body.count) body bytes" }
}
