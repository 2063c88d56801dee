/// A seeded userspace PRNG for bulk test data. `SystemRandomNumberGenerator` makes one `getrandom()` syscall per
/// value, which doubled the bulk-load time in the feasibility study.
package struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    package init(seed: UInt64) { state = seed }

    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// A lower-case 64-hex APNs-style token.
    package mutating func token() -> String {
        var bytes = [UInt8]()
        bytes.reserveCapacity(64)
        for _ in 0..<4 {
            var word = next()
            for _ in 0..<16 {
                bytes.append(Self.hexDigits[Int(word & 0xF)])
                word >>= 4
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
