/// An HTTP request method (RFC 9110 §9). Any token is a valid method; the common ones are static members.
public struct HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    /// The method exactly as sent on the wire (methods are case-sensitive).
    public let rawValue: String

    public init(_ rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod("GET")
    public static let head = HTTPMethod("HEAD")
    public static let post = HTTPMethod("POST")
    public static let put = HTTPMethod("PUT")
    public static let delete = HTTPMethod("DELETE")
    public static let patch = HTTPMethod("PATCH")
    public static let options = HTTPMethod("OPTIONS")

    public var description: String { rawValue }
}
