import BeamsModel
import ConfigModel
import Foundation
import HTTPClient
import JSON
import JWTSigner
import Observability
import PushStore

/// A run-time instance's definition: the same JSON object as an entry of the config file's `instances`, validated
/// by the same reader (`ServerConfig.readInstance`), sealed with the key-encryption key when stored, masked when
/// shown.
struct InstanceDefinition: Sendable, Equatable {
    /// The object, secrets included.
    var object: [String: JSONValue]

    /// Fields whose values are secrets, wherever they appear in the definition: shown as `maskedValue`, and a
    /// `maskedValue` sent back in a PATCH or PUT keeps the stored value.
    /// (Key files, `…Env` and `…File` fields name where a secret is, not the secret: shown as given.)
    static let secretFields: Set<String> = ["secretKey", "secret", "clientSecret"]
    static let maskedValue = "********"

    /// What validation found: the instance, or every problem (path and message, as `check-config` names them).
    enum Validation: Sendable {
        case valid(InstanceConfig, warnings: [ConfigIssue])
        case invalid([ConfigIssue])
    }

    /// Validates exactly as a config-file instance is (the same reader, the same destination policy), under the
    /// path `instance`. - Parameter id: the id the definition must carry (a route's), nil to take the body's.
    func validate(
        id: String?, policy: DestinationPolicy, environment: [String: String],
        validateKey: (String) -> String?
    ) -> Validation {
        var reader = ConfigReader()
        if let id, let given = object["id"]?.stringValue, given.lowercased() != id.lowercased() {
            reader.error("instance.id", "must be \(id), the instance the request names (an id cannot change)")
        }
        for (path, _) in Self.secretPaths(object)
        where Self.value(at: path, in: object)?.stringValue == Self.maskedValue {
            reader.error("instance.\(path.joined(separator: "."))", "is the mask \(Self.maskedValue), not a secret")
        }
        let instance = ServerConfig.readInstance(
            object, "instance", policy: policy, &reader, environment: environment,
            validateKey: validateKey)
        let errors = reader.issues.filter { $0.severity == .error }
        guard errors.isEmpty, let instance else { return .invalid(errors) }
        return .valid(instance, warnings: reader.issues.filter { $0.severity == .warning })
    }

    /// The definition with every secret replaced by `maskedValue`, for GET and the CLI.
    var masked: JSONValue { .object(Self.mask(object)) }

    private static func mask(_ object: [String: JSONValue]) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for (key, value) in object {
            if secretFields.contains(key), !value.isNull {
                result[key] = .string(maskedValue)
            } else if let nested = value.objectValue {
                result[key] = .object(mask(nested))
            } else {
                result[key] = value
            }
        }
        return result
    }

    /// Every secret field's path (`["webhook", "secret"]`) with its value.
    static func secretPaths(_ object: [String: JSONValue], prefix: [String] = []) -> [([String], JSONValue)] {
        var found: [([String], JSONValue)] = []
        for (key, value) in object {
            if secretFields.contains(key), !value.isNull {
                found.append((prefix + [key], value))
            } else if let nested = value.objectValue {
                found += secretPaths(nested, prefix: prefix + [key])
            }
        }
        return found
    }

    static func value(at path: [String], in object: [String: JSONValue]) -> JSONValue? {
        guard let first = path.first else { return nil }
        guard path.count > 1 else { return object[first] }
        return object[first]?.objectValue.flatMap { value(at: Array(path.dropFirst()), in: $0) }
    }

    /// `patch` applied to this definition as a JSON merge patch (RFC 7396: `null` removes a field, objects merge,
    /// anything else replaces), where a secret sent back as `maskedValue` keeps the stored value.
    func merging(_ patch: [String: JSONValue]) -> InstanceDefinition {
        InstanceDefinition(object: Self.merge(object, patch))
    }

    /// A whole new definition (PUT) where a secret sent back as `maskedValue` keeps the stored value at that path.
    func replacing(with new: [String: JSONValue]) -> InstanceDefinition {
        InstanceDefinition(object: Self.keepMasked(new, old: object))
    }

    private static func merge(_ target: [String: JSONValue], _ patch: [String: JSONValue]) -> [String: JSONValue] {
        var result = target
        for (key, value) in patch {
            if value.isNull {
                result[key] = nil
            } else if let nested = value.objectValue {
                result[key] = .object(merge(target[key]?.objectValue ?? [:], nested))
            } else if value.stringValue == maskedValue, secretFields.contains(key), target[key] != nil {
                continue
            } else {
                result[key] = value
            }
        }
        return result
    }

    private static func keepMasked(_ new: [String: JSONValue], old: [String: JSONValue]) -> [String: JSONValue] {
        var result = new
        for (key, value) in new {
            if value.stringValue == maskedValue, secretFields.contains(key), let kept = old[key] {
                result[key] = kept
            } else if let nested = value.objectValue {
                result[key] = .object(keepMasked(nested, old: old[key]?.objectValue ?? [:]))
            }
        }
        return result
    }

    // MARK: Sealing

    /// The definition sealed with `seal` (AES-256-GCM, bound to the instance id), base64.
    func sealed(id: String, with seal: SecretSeal) throws(CryptoError) -> String {
        let text = JSONValue.object(object).serialized()
        return Data(try seal.seal(text, associatedData: Self.associatedData(id))).base64EncodedString()
    }

    /// Opens a stored definition. - Returns: nil when it does not open with `seal` (another key sealed it) or is
    /// not a JSON object.
    static func open(_ stored: StoredInstance, with seal: SecretSeal) -> InstanceDefinition? {
        guard let sealed = Data(base64Encoded: stored.sealedDefinition),
            let plain = try? seal.open(Array(sealed), associatedData: associatedData(stored.id)),
            let object = JSONValue.parse(Data(plain))?.objectValue
        else { return nil }
        return InstanceDefinition(object: object)
    }

    static func associatedData(_ id: String) -> [UInt8] {
        Array("push-server instance \(id.lowercased())".utf8)
    }
}
