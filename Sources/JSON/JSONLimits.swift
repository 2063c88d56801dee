/// Bounds the parser enforces before building anything, so hostile input cannot exhaust the stack or memory.
public struct JSONLimits: Sendable, Equatable {
    /// Deepest nesting of arrays and objects accepted. Default 32: Beams bodies, APNs payloads, JWTs and the config
    /// file are all far shallower, and the parser recurses once per level.
    package var maxDepth: Int
    /// Longest input accepted, in bytes. Default 8 MiB: above every body limit of the HTTP server and above any
    /// sane config file; callers with a tighter bound (the HTTP body limits) enforce it before parsing.
    package var maxBytes: Int
    /// Most elements accepted in any one array. Default unlimited; a caller whose array is capped (the 5000
    /// interests of a device) sets it, so a longer array is refused at its first surplus element instead of
    /// being parsed, built and validated in full (the error's `kind` is `.arrayTooLong`).
    package var maxArrayCount: Int

    public init(maxDepth: Int = 32, maxBytes: Int = 8 << 20, maxArrayCount: Int = .max) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
        self.maxArrayCount = maxArrayCount
    }
}
