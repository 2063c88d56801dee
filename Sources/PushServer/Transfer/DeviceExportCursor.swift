import JWTSigner

/// Where an export resumes (`--after`, `?after=`): the position of the last device written, bound to the instance
/// exported (or to a whole-store export), as an opaque base64url string, so a cursor of one instance cannot resume
/// another's export. Every device line carries the cursor that resumes after it (docs/DATA-FORMAT.md).
package struct DeviceExportCursor: Equatable {
    /// The instance exported; nil: every instance.
    package var instanceID: String?
    /// The store's key of the last device written.
    package var position: Int64

    /// The text form: base64url of `v1 <instance or *> <position>`.
    package var text: String {
        Base64URL.encode(Array("v1 \(instanceID ?? "*") \(position)".utf8))
    }

    /// Why a cursor cannot resume this export.
    package enum Problem: Error, Equatable {
        case malformed
        case otherExport
    }

    /// Reads a cursor for an export of `instanceID` (nil: every instance).
    package static func parse(_ text: String, instanceID: String?) throws(Problem) -> DeviceExportCursor {
        guard text.utf8.count <= 512, let bytes = try? Base64URL.decode(Substring(text)) else { throw .malformed }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "v1", let position = Int64(parts[2]), position >= 0 else {
            throw .malformed
        }
        let instance = parts[1] == "*" ? nil : String(parts[1])
        guard instance == instanceID else { throw .otherExport }
        return DeviceExportCursor(instanceID: instance, position: position)
    }
}
