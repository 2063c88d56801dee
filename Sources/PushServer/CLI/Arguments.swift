/// Parsed command-line options: `--name value`, `--name=value`, boolean `--flag`, and positionals.
package struct Arguments: Sendable {
    package private(set) var options: [String: String] = [:]
    package private(set) var flags: Set<String> = []
    package private(set) var positionals: [String] = []

    /// - Parameter booleanFlags: options that take no value (`--help`, `--json`).
    package init(_ arguments: [String], booleanFlags: Set<String> = ["help", "h"]) throws(UsageError) {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" {
                positionals.append(contentsOf: arguments[index...])
                break
            }
            guard argument.hasPrefix("-"), argument.count > 1 else {
                positionals.append(argument)
                continue
            }
            var name = String(argument.drop(while: { $0 == "-" }))
            var value: String?
            if let equals = name.firstIndex(of: "=") {
                value = String(name[name.index(after: equals)...])
                name = String(name[..<equals])
            }
            if booleanFlags.contains(name) {
                guard value == nil else { throw UsageError("--\(name) takes no value") }
                flags.insert(name)
                continue
            }
            if value == nil {
                guard index < arguments.count else { throw UsageError("--\(name) needs a value") }
                value = arguments[index]
                index += 1
            }
            guard options[name] == nil else { throw UsageError("--\(name) given twice") }
            options[name] = value
        }
    }

    package func has(_ flag: String) -> Bool { flags.contains(flag) }
    package subscript(_ name: String) -> String? { options[name] }

    /// The value of a required option.
    package func require(_ name: String) throws(UsageError) -> String {
        guard let value = options[name], !value.isEmpty else { throw UsageError("--\(name) is required") }
        return value
    }

    /// Fails on options the command does not know, so a typo is never silently ignored.
    package func allowOnly(_ names: Set<String>) throws(UsageError) {
        for name in options.keys.sorted() where !names.contains(name) { throw UsageError("unknown option --\(name)") }
        for flag in flags.sorted() where !names.contains(flag) && flag != "help" && flag != "h" {
            throw UsageError("unknown option --\(flag)")
        }
    }
}

/// A command-line mistake: printed with the command's usage, exit status 2.
package struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
