/// One HTTP request header of a Web Push request, in the order it should be sent.
public struct WebPushHeader: Sendable, Equatable, CustomStringConvertible {
    public let name: String
    public let value: String

    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `Name: value`, the form libcurl's header list takes.
    public var description: String { "\(name): \(value)" }
}
