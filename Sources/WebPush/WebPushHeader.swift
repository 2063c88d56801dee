/// One HTTP request header of a Web Push request, in the order it should be sent.
package struct WebPushHeader: Sendable, Equatable, CustomStringConvertible {
    package let name: String
    package let value: String

    package init(name: String, value: String) {
        self.name = name
        self.value = value
    }

    /// `Name: value`, the form libcurl's header list takes.
    package var description: String { "\(name): \(value)" }
}
