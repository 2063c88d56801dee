import JSON

/// A control API answer that does not have the expected shape: which field, and what is wrong with it.
struct MockJSONError: Error, CustomStringConvertible {
    var field: String
    var problem: String

    init(_ field: String, _ problem: String) {
        self.field = field
        self.problem = problem
    }

    var description: String { "\(field): \(problem)" }
}

/// Typed reads of one JSON object from the mock's control API, each failing with the field's name.
struct MockJSONObject {
    let object: [String: JSONValue]

    init(_ value: JSONValue) throws(MockJSONError) {
        guard let object = value.objectValue else {
            throw MockJSONError("(answer)", "expected an object, got \(value.typeName)")
        }
        self.object = object
    }

    private func required(_ key: String) throws(MockJSONError) -> JSONValue {
        guard let value = object[key], !value.isNull else { throw MockJSONError(key, "missing") }
        return value
    }

    private func optional<T>(_ key: String, _ type: String, _ read: (JSONValue) -> T?) throws(MockJSONError) -> T? {
        guard let value = object[key], !value.isNull else { return nil }
        guard let typed = read(value) else { throw MockJSONError(key, "expected \(type), got \(value.typeName)") }
        return typed
    }

    func optionalInt(_ key: String) throws(MockJSONError) -> Int? { try optional(key, "an integer", \.intValue) }
    func optionalDouble(_ key: String) throws(MockJSONError) -> Double? { try optional(key, "a number", \.doubleValue) }
    func optionalBool(_ key: String) throws(MockJSONError) -> Bool? { try optional(key, "a boolean", \.boolValue) }
    func optionalString(_ key: String) throws(MockJSONError) -> String? { try optional(key, "a string", \.stringValue) }

    func optionalObject(_ key: String) throws(MockJSONError) -> MockJSONObject? {
        guard let value = object[key], !value.isNull else { return nil }
        return try MockJSONObject(value)
    }

    func int(_ key: String) throws(MockJSONError) -> Int {
        guard let value = try optionalInt(key) else { throw MockJSONError(key, "missing") }
        return value
    }

    func double(_ key: String) throws(MockJSONError) -> Double {
        guard let value = try optionalDouble(key) else { throw MockJSONError(key, "missing") }
        return value
    }

    func string(_ key: String) throws(MockJSONError) -> String {
        guard let value = try optionalString(key) else { throw MockJSONError(key, "missing") }
        return value
    }

    func array(_ key: String) throws(MockJSONError) -> [JSONValue] {
        let value = try required(key)
        guard let elements = value.arrayValue else {
            throw MockJSONError(key, "expected an array, got \(value.typeName)")
        }
        return elements
    }

    func objectMembers(_ key: String) throws(MockJSONError) -> [String: JSONValue] {
        try MockJSONObject(try required(key)).object
    }

    /// `{"name": integer, …}`.
    func intMap(_ key: String) throws(MockJSONError) -> [String: Int] {
        try Self.ints(try objectMembers(key), key)
    }

    /// `{"name": {"name": integer, …}, …}`; absent means empty.
    func nestedIntMap(_ key: String) throws(MockJSONError) -> [String: [String: Int]] {
        guard let outer = try optionalObject(key) else { return [:] }
        var result: [String: [String: Int]] = [:]
        for (name, value) in outer.object {
            result[name] = try Self.ints(try MockJSONObject(value).object, "\(key).\(name)")
        }
        return result
    }

    private static func ints(_ members: [String: JSONValue], _ path: String) throws(MockJSONError) -> [String: Int] {
        var result: [String: Int] = [:]
        for (name, value) in members {
            guard let number = value.intValue else { throw MockJSONError("\(path).\(name)", "expected an integer") }
            result[name] = number
        }
        return result
    }
}
