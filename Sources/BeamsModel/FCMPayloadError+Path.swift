import FCMClient

extension FCMPayloadError {
    /// The publish body member the error is about, for the Beams-style 422 (`fcm` for the message as a whole).
    package var path: String {
        switch self {
        case .notAnObject(let path), .unknownField(let path), .wrongType(let path, _), .invalidValue(let path, _):
            return path
        case .reservedDataKey: return "fcm.data"
        case .tooLarge: return "fcm"
        }
    }
}
