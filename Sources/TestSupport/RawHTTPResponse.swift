import JSON

/// A parsed HTTP/1.x response as read by `RawHTTPClient`.
public struct RawHTTPResponse: Sendable, CustomStringConvertible {
    public var status: Int
    public var reason: String
    public var version: String
    /// Header fields in arrival order, names as sent.
    public var headers: [(name: String, value: String)]
    public var body: [UInt8]

    /// First value of `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    /// Every value of `name` (case-insensitive).
    public func headerValues(_ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    public var bodyText: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as a JSON object, or nil.
    public var jsonObject: [String: JSONValue]? { JSONValue.parse(body)?.objectValue }

    /// Whether the server announced it will close the connection.
    public var closesConnection: Bool {
        headerValues("connection").contains { $0.lowercased().contains("close") }
    }

    public var description: String { "\(status) \(reason) \(headers.count) headers, \(body.count) body bytes" }
}
