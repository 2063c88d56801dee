import PushServer

/// The descriptions of the error-severity issues `parse` throws, `[]` when it does not throw: what each config
/// test's `errors` helper returns for the file it builds. Anything thrown besides a `ConfigError` is returned as
/// its description.
func configErrors(_ parse: () throws -> Void) -> [String] {
    do {
        try parse()
        return []
    } catch let error as ConfigError {
        return error.errorDescriptions
    } catch {
        return ["\(error)"]
    }
}

extension ConfigError {
    /// The descriptions of its error-severity issues (warnings left out).
    var errorDescriptions: [String] { issues.filter { $0.severity == .error }.map(\.description) }
}
