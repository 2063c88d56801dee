/// An HTTP request method (RFC 9110 §9). Any token is a valid method; the common ones are static members.
public struct HTTPMethod: Hashable, Sendable, CustomStringConvertible {
    /// The method exactly as sent on the wire (methods are case-sensitive).
    package let rawValue: String

    /// A method from its token (not validated here; the parser only produces valid tokens).
    package init(_ rawValue: String) { self.rawValue = rawValue }

    // The methods handlers usually route on.
    package static let get = HTTPMethod("GET")
    package static let head = HTTPMethod("HEAD")
    package static let post = HTTPMethod("POST")
    package static let put = HTTPMethod("PUT")
    package static let delete = HTTPMethod("DELETE")
    package static let patch = HTTPMethod("PATCH")
    package static let options = HTTPMethod("OPTIONS")

    public var description: String { rawValue }
}
