import Foundation
import JSON
import Logging
import PushStore

/// The device data format, version 1 (docs/DATA-FORMAT.md): NDJSON, a header line, one line per device, an end
/// line. Export writes it; import reads it (`DeviceLineParser`).
package enum DeviceDataFormat {
    package static let name = "push-server-devices"
    package static let version = 1

    /// The first line: what the file is, which instance, when it was read and where it started.
    package static func header(instanceID: String?, after: DeviceExportCursor?, exportedAt: Date) -> [UInt8] {
        line(
            .object([
                "format": .string(name),
                "version": .int(version),
                "instance": instanceID.map(JSONValue.string) ?? .null,
                "exportedAt": .string(timestamp(exportedAt)),
                "after": after.map { .string($0.text) } ?? .null,
            ]))
    }

    /// The last line: its absence tells a reader the export was cut short (resume with the last line's cursor).
    /// `more`: the export stopped at a page's size (the admin API) and devices may follow `cursor`.
    package static func end(devices: Int, cursor: DeviceExportCursor?, more: Bool = false) -> [UInt8] {
        line(
            .object([
                "end": .bool(true),
                "devices": .int(devices),
                "cursor": cursor.map { .string($0.text) } ?? .null,
                "more": .bool(more),
            ]))
    }

    /// One device line.
    package static func deviceLine(_ record: DeviceRecord, cursor: DeviceExportCursor) -> [UInt8] {
        let device = record.device
        var object: [String: JSONValue] = [
            "cursor": .string(cursor.text),
            "instance": .string(device.instanceID),
            "id": .string(device.id),
            "platform": .string(device.platform.rawValue),
            "environment": .string(device.environment.rawValue),
            "environmentDeclared": .bool(device.environmentDeclared),
            "bundleId": device.bundleID.map(JSONValue.string) ?? .null,
            "metadata": device.metadataJSON,
            "userId": device.userID.map(JSONValue.string) ?? .null,
            "timeZone": device.timeZone.map(JSONValue.string) ?? .null,
            "interests": .array(record.interests.map(JSONValue.string)),
            "createdAt": .string(timestamp(device.createdAt)),
            "lastRegisteredAt": .string(timestamp(device.lastRegisteredAt)),
            "lastResult": device.lastResult.map { result in
                .object([
                    "status": .int(result.status),
                    "reason": result.reason.map(JSONValue.string) ?? .null,
                    "at": .string(timestamp(result.at)),
                ])
            } ?? .null,
            "invalidatedAt": device.invalidatedAt.map { .string(timestamp($0)) } ?? .null,
            "liveActivities": .array(
                record.liveActivityTokens.map { token in
                    .object([
                        "kind": .string(token.kind.rawValue),
                        "token": .string(token.token),
                        "attributesType": .string(token.attributesType),
                        "activityId": token.activityID.map(JSONValue.string) ?? .null,
                        "reference": token.reference.map(JSONValue.string) ?? .null,
                        "expiresAt": token.expiresAt.map { .string(timestamp($0)) } ?? .null,
                        "createdAt": .string(timestamp(token.createdAt)),
                        "updatedAt": .string(timestamp(token.updatedAt)),
                    ])
                }),
        ]
        switch device.platform {
        case .web, .unifiedpush:
            // The stored token is the canonical subscription JSON: written as the object it is.
            object["subscription"] = JSONValue.parse(Array(device.token.utf8)) ?? .string(device.token)
        case .apns, .fcm, .hms:
            object["token"] = .string(device.token)
        }
        return line(.object(object))
    }

    /// RFC 3339 UTC with milliseconds, the store's precision.
    package static func timestamp(_ date: Date) -> String { LogFormat.timestamp(date) }

    private static func line(_ value: JSONValue) -> [UInt8] {
        var bytes = value.serialized()
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }
}
