import CBuildInfo

/// What this binary is: the product version (defined here and nowhere else: `make deb` asks the built binary for
/// it), and the git commit and build date `make` links in (see Sources/CBuildInfo/shim.h). A plain `swift build`
/// reports both as "unknown".
public enum BuildInfo {
    /// The product version, printed by `push-server version`, in `/health` and in `push_server_build_info`; also
    /// the Debian package version.
    public static let version = "0.1.0"
    /// The abbreviated git commit the binary was built from (`-dirty` when the work tree had changes).
    public static let commit = text(cbuildinfo_commit())
    /// When the binary was built, ISO 8601 UTC (`SOURCE_DATE_EPOCH` when set, for reproducible packages).
    public static let date = text(cbuildinfo_date())

    private static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer, pointer.pointee != 0 else { return "unknown" }
        return String(cString: pointer)
    }
}
