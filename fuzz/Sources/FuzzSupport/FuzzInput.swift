import Foundation

/// What libFuzzer hands a target, split into the leading control bytes (they pick the route, read sizes, limits:
/// choices libFuzzer's mutations explore like any other byte) and the bytes under test.
public struct FuzzInput {
    public let control: [UInt8]
    public let bytes: [UInt8]

    /// nil when the input is too short to hold the control bytes.
    public init?(_ data: UnsafePointer<UInt8>?, _ size: Int, controlBytes: Int) {
        guard let data, size >= controlBytes else { return nil }
        let input = UnsafeBufferPointer(start: data, count: size)
        control = Array(input[..<controlBytes])
        bytes = Array(input[controlBytes...])
    }
}

/// The intake clock of every target that needs one, fixed so that a crash replays (schedules, expiries and report
/// times are judged against it).
public let fuzzIntakeTime = Date(timeIntervalSince1970: 1_780_000_000)
