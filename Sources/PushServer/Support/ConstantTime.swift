/// Comparison whose duration depends only on the length of the presented value, never on where it first
/// differs from the secret: secrets must not be guessable byte by byte from response times.
package enum ConstantTime {
    package static func equals(_ presented: String, _ secret: String) -> Bool {
        equals(Array(presented.utf8), Array(secret.utf8))
    }

    package static func equals(_ presented: [UInt8], _ secret: [UInt8]) -> Bool {
        var difference = UInt(bitPattern: presented.count ^ secret.count)
        guard !secret.isEmpty else { return false }
        for index in 0..<presented.count {
            difference |= UInt(presented[index] ^ secret[index % secret.count])
        }
        return difference == 0
    }
}
