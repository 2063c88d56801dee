import JSON

/// Walks a decoded JSON object and collects every problem with its path, so `check-config` can report all of
/// them at once. Unknown keys are reported as warnings: a typo like `"prot"` must not pass silently.
struct ConfigReader {
    private(set) var issues: [ConfigIssue] = []
    /// Every secret read, with where it came from (`ServerConfig.exposureIssues`).
    private(set) var secretSources: [SecretSource] = []

    /// Records a secret read from `file` (nil: inline in the configuration file).
    mutating func secret(_ field: String, file: String?) {
        secretSources.append(SecretSource(field: field, file: file))
    }

    mutating func error(_ path: String, _ message: String) { issues.append(ConfigIssue(path, message)) }
    mutating func warning(_ path: String, _ message: String) {
        issues.append(ConfigIssue(path, message, severity: .warning))
    }

    /// When `path` has errors, replaces them by one error saying `message`: for a field whose errors all follow
    /// from one cause (ServerConfig.explainUnsetVariables). - Returns: whether there were any.
    mutating func replaceErrors(at path: String, with message: String) -> Bool {
        guard issues.contains(where: { $0.path == path && $0.severity == .error }) else { return false }
        issues.removeAll { $0.path == path && $0.severity == .error }
        error(path, message)
        return true
    }

    /// Returns the object at `path`, or nil (recording an error when present with the wrong type).
    mutating func object(_ value: JSONValue?, _ path: String) -> [String: JSONValue]? {
        guard let value, !value.isNull else { return nil }
        guard let object = value.objectValue else {
            error(path, "must be an object, got \(value.typeName)")
            return nil
        }
        return object
    }

    mutating func checkKeys(_ object: [String: JSONValue], _ path: String, allowed: Set<String>) {
        for key in object.keys.sorted() where !allowed.contains(key) {
            warning(join(path, key), "unknown key (ignored)")
        }
    }

    mutating func string(_ object: [String: JSONValue], _ key: String, _ path: String) -> String? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let string = value.stringValue else {
            error(join(path, key), "must be a string, got \(value.typeName)")
            return nil
        }
        return string
    }

    /// `true` or `false`; anything else (including `1` and `"true"`) is an error.
    mutating func bool(_ object: [String: JSONValue], _ key: String, _ path: String) -> Bool? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let bool = value.boolValue else {
            error(join(path, key), "must be true or false, got \(value.typeName)")
            return nil
        }
        return bool
    }

    /// An integer within `range`; fractional numbers, booleans and strings are errors.
    mutating func int(_ object: [String: JSONValue], _ key: String, _ path: String, in range: ClosedRange<Int>) -> Int?
    {
        guard let value = object[key], !value.isNull else { return nil }
        guard let int = value.intValue else {
            error(
                join(path, key), "must be an integer, got \(value.typeName == "number" ? "a fraction" : value.typeName)"
            )
            return nil
        }
        guard range.contains(int) else {
            error(join(path, key), "must be between \(range.lowerBound) and \(range.upperBound), got \(int)")
            return nil
        }
        return int
    }

    // A field whose default stands until the file gives a valid value: each reads as above and sets `field` only
    // when the value is there and valid (an invalid one is recorded and leaves the default).

    mutating func bool(_ object: [String: JSONValue], _ key: String, _ path: String, into field: inout Bool) {
        if let value = bool(object, key, path) { field = value }
    }

    mutating func int(
        _ object: [String: JSONValue], _ key: String, _ path: String, in range: ClosedRange<Int>, into field: inout Int
    ) {
        if let value = int(object, key, path, in: range) { field = value }
    }

    func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
}
