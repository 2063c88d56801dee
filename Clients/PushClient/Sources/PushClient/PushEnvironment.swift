/// The APNs environment a device token belongs to: `sandbox` for apps run from Xcode (development signing),
/// `production` for TestFlight and the App Store. A token only works in its own environment.
public enum PushEnvironment: String, Codable, Sendable, CaseIterable {
    case sandbox
    case production
}
