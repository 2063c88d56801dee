import CBuildInfo

/// What this binary is: the product version, the git commit and the build date, all three linked in by `make` (see
/// Sources/CBuildInfo/shim.h). The version is set at build time (`make deb VERSION=…`; by default the newest entry
/// of deploy/deb/changelog), so a release edits no source; `make deb` asks the built binary for it. A plain
/// `swift build` reports all three as "unknown".
package enum BuildInfo {
    /// The product version, printed by `push-server version`, in `/health` and in `push_server_build_info`; also
    /// the Debian package version.
    package static let version = text(cbuildinfo_version())
    /// The abbreviated git commit the binary was built from (`-dirty` when the work tree had changes).
    package static let commit = text(cbuildinfo_commit())
    /// When the binary was built, ISO 8601 UTC (`SOURCE_DATE_EPOCH` when set, for reproducible packages).
    package static let date = text(cbuildinfo_date())

    private static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        guard let pointer, pointer.pointee != 0 else { return "unknown" }
        return String(cString: pointer)
    }
}
