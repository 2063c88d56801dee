import JSON

/// A device's `metadata` member (registration, `PUT …/metadata`, device import): a JSON object of at most 4 KiB,
/// stored as its text.
public enum DeviceMetadata {
    /// The text to store: `{}` for none, else the object as written by the serializer.
    public static func text(_ value: JSONValue?) throws(BeamsError) -> String {
        guard let value, !value.isNull else { return "{}" }
        guard value.objectValue != nil else { throw BeamsError(400, "Bad request", "`metadata` must be a JSON object") }
        let text = value.jsonText
        guard text.utf8.count <= 4096 else {
            throw BeamsError(400, "Bad request", "`metadata` is too large (max 4KiB)")
        }
        return text
    }
}
