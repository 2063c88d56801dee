/// The `apns-priority` header.
package struct APNsPriority: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    package let rawValue: Int

    package init?(rawValue: Int) {
        guard rawValue == 10 || rawValue == 5 || rawValue == 1 else { return nil }
        self.rawValue = rawValue
    }

    private init(checked: Int) { self.rawValue = checked }

    /// `10`: deliver now (APNs' default when the header is absent). Never valid for `background` pushes.
    package static let immediate = APNsPriority(checked: 10)
    /// `5`: deliver considering the device's power; may be grouped. Required for `background` pushes.
    package static let powerConsidered = APNsPriority(checked: 5)
    /// `1`: prioritise the device's power over delivery; prevents waking the device.
    package static let powerPrioritized = APNsPriority(checked: 1)

    package var description: String { String(rawValue) }
}
