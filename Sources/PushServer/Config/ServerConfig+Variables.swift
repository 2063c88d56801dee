import JSON

// `${NAME}` in a path whose variable is not set. It expands to nothing, so `${CREDENTIALS_DIRECTORY}/tls-cert.pem`
// becomes `/tls-cert.pem` and the file checks would report that path as missing: true, but it sends the operator
// looking for the wrong file. The field gets one error naming the variable instead.
extension ServerConfig {
    /// Replaces the errors of every string field that names an unset `${NAME}` by one error saying which variable
    /// is missing (and what the path became). A field without errors (the expanded path exists, or the field is
    /// not a path) is left alone. - Returns: the unset variables' names behind those errors, sorted.
    static func explainUnsetVariables(
        in root: JSONValue, _ environment: [String: String], _ reader: inout ConfigReader
    ) -> [String] {
        var unset = Set<String>()
        forEachString(in: root, path: "") { path, value in
            let missing = variableNames(in: value).filter { environment[$0] == nil }
            guard !missing.isEmpty else { return }
            let names = missing.map { "${\($0)}" }.joined(separator: " and ")
            let expanded = expandVariables(value, environment)
            if reader.replaceErrors(
                at: path,
                with: "\(names) \(missing.count == 1 ? "is" : "are") not set "
                    + "(the path would be \"\(expanded)\")")
            {
                unset.formUnion(missing)
            }
        }
        return unset.sorted()
    }

    /// The names of the `${NAME}` references in `value`, in order, without repeats.
    static func variableNames(in value: String) -> [String] {
        var names: [String] = []
        var rest = Substring(value)
        while let start = rest.range(of: "${"), let end = rest[start.upperBound...].firstIndex(of: "}") {
            let name = String(rest[start.upperBound..<end])
            if !names.contains(name) { names.append(name) }
            rest = rest[rest.index(after: end)...]
        }
        return names
    }

    /// Calls `body` with the JSON path (`instances[0].apns.keyPath`, as ConfigReader names fields) of every string.
    private static func forEachString(in value: JSONValue, path: String, _ body: (String, String) -> Void) {
        switch value {
        case .string(let text):
            body(path, text)
        case .object(let members):
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                forEachString(in: member, path: path.isEmpty ? key : "\(path).\(key)", body)
            }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                forEachString(in: element, path: "\(path)[\(index)]", body)
            }
        case .null, .bool, .int, .double:
            break
        }
    }
}
