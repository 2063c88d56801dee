import Foundation

/// What the client remembers between launches, per instance.
public struct DeviceState: Codable, Equatable, Sendable {
    /// The server's id for this device (`apns-…`, `hms-…`, `unifiedpush-…`), set by registration.
    public var deviceID: String?
    /// The platform the device registered with; nil (state saved by an older version) is APNs.
    public var platform: PushPlatform?
    /// The APNs token as lower-case hex and its environment, or the HMS token; kept to register again after a 404.
    public var deviceToken: String?
    public var environment: PushEnvironment?
    /// The UnifiedPush endpoint and keys, kept to register again after a 404.
    public var unifiedPush: UnifiedPushSubscription?
    /// The interests this app wants, sorted. `nil` until the app or the server first sets them: a fresh install
    /// adopts the server's set (the device may have been registered before), later the local set wins.
    public var interests: [String]?
    /// The user the device is bound to.
    public var userID: String?

    public init(deviceID: String? = nil, deviceToken: String? = nil, environment: PushEnvironment? = nil,
                interests: [String]? = nil, userID: String? = nil, platform: PushPlatform? = nil,
                unifiedPush: UnifiedPushSubscription? = nil) {
        self.deviceID = deviceID
        self.platform = platform
        self.unifiedPush = unifiedPush
        self.deviceToken = deviceToken
        self.environment = environment
        self.interests = interests
        self.userID = userID
    }
}

/// Where `DeviceState` is kept. Tests inject `InMemoryDeviceStateStore`; apps use a file or `UserDefaults`.
public protocol DeviceStateStore: Sendable {
    /// The saved state, or nil when there is none (or it cannot be read: the client then starts fresh).
    func load() -> DeviceState?
    func save(_ state: DeviceState) throws
}

/// A JSON file, written atomically (a crash never leaves half a file).
public struct FileDeviceStateStore: DeviceStateStore {
    public let url: URL

    public init(url: URL) { self.url = url }

    /// `Application Support/PushClient/<instance>.json` (the caches directory is not used: it may be purged).
    public static func standard(instanceID: String) throws -> FileDeviceStateStore {
        let base = try FileManager.default.url(for: .applicationSupportDirectory, in: .userDomainMask,
                                               appropriateFor: nil, create: true)
        let directory = base.appendingPathComponent("PushClient", isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return FileDeviceStateStore(url: directory.appendingPathComponent("\(instanceID).json"))
    }

    public func load() -> DeviceState? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(DeviceState.self, from: data)
    }

    public func save(_ state: DeviceState) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(state).write(to: url, options: .atomic)
    }
}

/// `UserDefaults` under one key per instance, as the Beams SDK keeps its state.
public final class UserDefaultsDeviceStateStore: DeviceStateStore, @unchecked Sendable {
    // @unchecked: UserDefaults is documented as thread-safe but is not marked Sendable.
    private let defaults: UserDefaults
    private let key: String

    public init(defaults: UserDefaults = .standard, instanceID: String) {
        self.defaults = defaults
        self.key = "PushClient.\(instanceID)"
    }

    public func load() -> DeviceState? {
        guard let data = defaults.data(forKey: key) else { return nil }
        return try? JSONDecoder().decode(DeviceState.self, from: data)
    }

    public func save(_ state: DeviceState) throws {
        defaults.set(try JSONEncoder().encode(state), forKey: key)
    }
}

/// Memory only: for tests, or an app that wants nothing on disk.
public final class InMemoryDeviceStateStore: DeviceStateStore, @unchecked Sendable {
    // @unchecked: `state` is only touched while holding `lock`.
    private let lock = NSLock()
    private var state: DeviceState?

    public init(_ state: DeviceState? = nil) { self.state = state }

    public func load() -> DeviceState? {
        lock.lock()
        defer { lock.unlock() }
        return state
    }

    public func save(_ state: DeviceState) throws {
        lock.lock()
        defer { lock.unlock() }
        self.state = state
    }
}
