import JWTSigner

/// Checks a `.p8` file for `check-config` and start-up: readable, PEM, EC P-256, not encrypted.
enum APNsKeyCheck {
    /// A description of what is wrong with the key at `path`, or nil when it loads.
    static func problem(_ path: String) -> String? {
        do {
            _ = try ES256PrivateKey(contentsOfFile: path)
            return nil
        } catch {
            return error.description
        }
    }
}
