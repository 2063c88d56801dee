import Foundation

/// Registers this device with push-server (or any server speaking the Beams device API) and keeps its interests
/// and user in sync, the way the Beams iOS SDK does:
///
/// ```swift
/// let push = try PushClient(instanceID: "8a0c5c1e-…", baseURL: URL(string: "https://push.example.com")!)
/// // application(_:didRegisterForRemoteNotificationsWithDeviceToken:)
/// try await push.start(deviceToken: deviceToken, environment: .sandbox)   // .production for TestFlight/App Store
/// try await push.addInterest("news")
/// try await push.setUserID("alice") { userID in try await myBackend.beamsToken(for: userID) }
/// ```
///
/// Android devices without Google services register through `start(unifiedPush:)` or `start(hmsToken:)` instead
/// (`PushClient+Android.swift`); every other call works the same on the platform the device registered with.
///
/// - Calls run one at a time, in the order they were made.
/// - State (device id, token, interests, user) is saved after every change and loaded at init, so interests chosen
///   before `start` are sent when it runs, and a relaunch picks up where the last run stopped.
/// - Retries follow `RetryPolicy` (the SDK's rules). A 404 on a device call means the server forgot the device:
///   the client registers again, replays its interests and user, then repeats the call.
public actor PushClient {
    /// Sent as `X-Pusher-Library` and in the registration's `metadata.sdkVersion`.
    public static let version = "1.0.0"

    /// Issues a Beams user token for `userID` (the app asks its own backend, which signs it with the instance
    /// secret, e.g. `generateToken` in a Beams server SDK).
    public typealias TokenProvider = @Sendable (_ userID: String) async throws -> String

    public let instanceID: String
    public let baseURL: URL
    public let bundleIdentifier: String
    private let store: any DeviceStateStore
    private let transport: any HTTPTransport
    private let retryPolicy: RetryPolicy
    private let sleep: @Sendable (TimeInterval) async throws -> Void
    private var state: DeviceState
    private var tokenProvider: TokenProvider?
    /// The last queued call; each new call waits for it, so calls never interleave across their awaits.
    private var tail: Task<Void, Never>?

    /// - Parameters:
    ///   - baseURL: where push-server listens (`https://push.example.com`, or `http://127.0.0.1:8080` in
    ///     development; plain HTTP needs an App Transport Security exception on iOS).
    ///   - bundleIdentifier: sent at registration; defaults to the main bundle's.
    ///   - store: where state is kept; defaults to a JSON file in Application Support.
    ///   - sleep: waits between retries (tests pass a recording one).
    public init(
        instanceID: String, baseURL: URL, bundleIdentifier: String? = nil, store: (any DeviceStateStore)? = nil,
        transport: any HTTPTransport = URLSessionTransport(), retryPolicy: RetryPolicy = .sdk,
        sleep: @escaping @Sendable (TimeInterval) async throws -> Void = { seconds in
            try await Task.sleep(nanoseconds: UInt64(max(0, min(seconds, 3600)) * 1_000_000_000))
        }
    ) throws {
        self.instanceID = instanceID
        self.baseURL = baseURL
        self.bundleIdentifier = bundleIdentifier ?? Bundle.main.bundleIdentifier ?? "missing-bundle-id"
        let store = try store ?? FileDeviceStateStore.standard(instanceID: instanceID)
        self.store = store
        self.transport = transport
        self.retryPolicy = retryPolicy
        self.sleep = sleep
        self.state = store.load() ?? DeviceState()
    }

    // MARK: State

    /// The server's id for this device, once registered.
    public var deviceID: String? { state.deviceID }
    /// The interests this device follows (as far as the app asked; the server has the same set once calls return).
    public var interests: [String] { state.interests ?? [] }
    /// The user the device is bound to.
    public var userID: String? { state.userID }

    // MARK: Registration

    /// Registers the APNs token (call it on every launch, from `didRegisterForRemoteNotificationsWithDeviceToken`).
    /// - Returns: the device id.
    @discardableResult
    public func start(deviceToken: Data, environment: PushEnvironment) async throws -> String {
        try await start(deviceTokenHex: deviceToken.map { String(format: "%02x", $0) }.joined(), environment: environment)
    }

    /// `start` with the token as hex (`<…>`, spaces and capitals are accepted).
    @discardableResult
    public func start(deviceTokenHex: String, environment: PushEnvironment) async throws -> String {
        let token = String(deviceTokenHex.lowercased().filter { $0.isHexDigit })
        guard token.count == deviceTokenHex.filter({ !"<> \n\t".contains($0) }).count, !token.isEmpty,
              token.count % 2 == 0 else {
            throw PushClientError.invalidDeviceToken(deviceTokenHex)
        }
        return try await serially { client in try await client.register(.apns(token: token, environment: environment)) }
    }

    /// Deletes the device on the server and forgets every local state (interests and user included).
    public func stop() async throws {
        try await serially { client in try await client.unregister() }
    }

    // MARK: Interests

    /// Replaces the device's interests.
    public func setInterests(_ interests: [String]) async throws {
        for name in interests { try Self.validate(interest: name) }
        try await serially { client in try await client.changeInterests(.set(Set(interests))) }
    }

    /// Follows one more interest (no request when already followed).
    public func addInterest(_ interest: String) async throws {
        try Self.validate(interest: interest)
        try await serially { client in try await client.changeInterests(.add(interest)) }
    }

    /// Stops following an interest (no request when not followed).
    public func removeInterest(_ interest: String) async throws {
        try Self.validate(interest: interest)
        try await serially { client in try await client.changeInterests(.remove(interest)) }
    }

    /// Follows no interest.
    public func clearInterests() async throws {
        try await serially { client in try await client.changeInterests(.set([])) }
    }

    // MARK: User

    /// Binds the device to `userID`, proving it with a Beams token from `tokenProvider` (kept in memory to bind
    /// again if the server forgets the device). The same user again is a no-op; another user throws
    /// `userAlreadySet` (call `stop()` when the user signs out).
    public func setUserID(_ userID: String, tokenProvider: @escaping TokenProvider) async throws {
        guard !userID.isEmpty, userID.utf8.count <= 164 else { throw PushClientError.invalidUserID(userID) }
        try await serially { client in try await client.bindUser(userID, tokenProvider: tokenProvider) }
    }

    // MARK: Reporting

    /// What a notification report says happened.
    public enum ReportEvent: String, Sendable {
        /// The notification reached the device (call from the notification service extension or on receipt).
        case delivery = "Delivery"
        /// The user opened it.
        case open = "Open"
    }

    /// Reports a delivery or an open of a notification (its `data.pusher.publishId`), as the SDK does; push-server
    /// counts them in the publish's status and sends the instance webhooks for users.
    public func report(_ event: ReportEvent, publishID: String) async throws {
        try await serially { client in try await client.sendReport(event, publishID: publishID) }
    }

    // MARK: Implementation

    private enum InterestChange: Sendable {
        case set(Set<String>)
        case add(String)
        case remove(String)
    }

    private struct Registration: Decodable {
        var id: String
        var initialInterestSet: [String]?
    }

    private struct ErrorBody: Decodable {
        var description: String?
    }

    /// Runs `body` after every call made before it has finished.
    func serially<T: Sendable>(_ body: @escaping @Sendable (PushClient) async throws -> T) async throws -> T {
        let previous = tail
        let task = Task { () async throws -> T in
            await previous?.value
            return try await body(self)
        }
        tail = Task { _ = try? await task.value }
        return try await task.value
    }

    /// Registers (or registers again) the device with `registration`; a token or platform other than the saved one
    /// is a new device, whose user is not bound.
    func register(_ registration: DeviceRegistration) async throws -> String {
        var metadata = ["sdkVersion": "push-server-client \(Self.version)"]
        let os = ProcessInfo.processInfo.operatingSystemVersion
        #if os(iOS) || os(tvOS) || os(watchOS)
        metadata["iosVersion"] = "\(os.majorVersion).\(os.minorVersion).\(os.patchVersion)"
        #elseif os(macOS)
        metadata["macosVersion"] = "\(os.majorVersion).\(os.minorVersion).\(os.patchVersion)"
        #else
        _ = os
        #endif
        var fields = registration.fields
        fields["metadata"] = metadata
        if registration.platform == .apns { fields["bundleIdentifier"] = bundleIdentifier }
        let body = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        let data: Data
        do {
            data = try await request("POST", Self.devicesPath(instanceID, registration.platform), body: body)
        } catch let notFound as NotFound {
            throw PushClientError.instanceNotFound(notFound.description)
        }
        guard let answer = try? JSONDecoder().decode(Registration.self, from: data) else {
            throw PushClientError.badRequest("the registration answer is not {\"id\",\"initialInterestSet\"}")
        }
        let remote = Set(answer.initialInterestSet ?? [])
        var next = state
        // A new token is a new device: its user is not bound.
        if next.registration.map({ !Self.sameDevice($0, registration) }) ?? true { next.userID = nil }
        next.deviceID = answer.id
        next.record(registration)
        let local = next.interests.map(Set.init) ?? remote
        next.interests = local.sorted()
        try save(next)
        if local != remote {
            // The app's choice wins over what the server remembered (the SDK's rule on every start).
            _ = try await deviceRequest("PUT", "/interests", body: interestsBody(local))
        }
        return answer.id
    }

    /// Whether two registrations name one device on the server (an APNs token is one device in either environment).
    static func sameDevice(_ a: DeviceRegistration, _ b: DeviceRegistration) -> Bool {
        switch (a, b) {
        case (.apns(let x, _), .apns(let y, _)): return x == y
        default: return a == b
        }
    }

    /// `PUT …/token` (HMS) or `…/endpoint` (UnifiedPush): the registered device gets a new token and keeps its id,
    /// interests and user. When the server forgot the device, it is registered with the new token instead.
    func replaceToken(with registration: DeviceRegistration) async throws {
        guard let deviceID = state.deviceID, state.platform == registration.platform else {
            throw PushClientError.notStarted
        }
        let suffix = registration.platform == .unifiedpush ? "/endpoint" : "/token"
        let body = try JSONSerialization.data(withJSONObject: registration.fields, options: [.sortedKeys])
        var next = state
        next.record(registration)
        do {
            _ = try await request("PUT", "\(devicesPath)/\(Self.escape(deviceID))\(suffix)", body: body)
            try save(next)
        } catch is NotFound {
            try save(next)
            try await recreateDevice()
        }
    }

    /// A call on the instance rather than a device (`GET …/web-vapid-public-key`).
    func instanceRequest(_ method: String, _ suffix: String) async throws -> Data {
        do {
            return try await request(method, "/device_api/v1/instances/\(Self.escape(instanceID))\(suffix)")
        } catch let notFound as NotFound {
            throw PushClientError.instanceNotFound(notFound.description)
        }
    }

    private func unregister() async throws {
        if state.deviceID != nil {
            do {
                _ = try await request("DELETE", "\(devicesPath)/\(Self.escape(state.deviceID ?? ""))")
            } catch is NotFound {
                // Already gone: the end state is the same.
            }
        }
        tokenProvider = nil
        try save(DeviceState())
    }

    private func changeInterests(_ change: InterestChange) async throws {
        let current = Set(interests)
        let wanted: Set<String>
        switch change {
        case .set(let names): wanted = names
        case .add(let name): wanted = current.union([name])
        case .remove(let name): wanted = current.subtracting([name])
        }
        // An unchanged set costs no request (the SDK's `localInterestsChanged`).
        guard wanted != current || state.interests == nil else { return }
        var next = state
        next.interests = wanted.sorted()
        try save(next)
        guard state.deviceID != nil else { return }  // sent by `start`
        switch change {
        case .set: _ = try await deviceRequest("PUT", "/interests", body: interestsBody(wanted))
        case .add(let name): _ = try await deviceRequest("POST", "/interests/\(Self.escape(name))")
        case .remove(let name): _ = try await deviceRequest("DELETE", "/interests/\(Self.escape(name))")
        }
    }

    private func bindUser(_ userID: String, tokenProvider: @escaping TokenProvider) async throws {
        guard state.deviceID != nil else { throw PushClientError.notStarted }
        if let current = state.userID {
            guard current == userID else { throw PushClientError.userAlreadySet(current: current) }
            self.tokenProvider = tokenProvider
            return
        }
        self.tokenProvider = tokenProvider
        try await sendUser(userID, tokenProvider: tokenProvider)
    }

    private func sendUser(_ userID: String, tokenProvider: TokenProvider) async throws {
        let token: String
        do {
            token = try await tokenProvider(userID)
        } catch {
            throw PushClientError.tokenProvider("\(error)")
        }
        _ = try await deviceRequest("PUT", "/user", headers: ["Authorization": "Bearer \(token)"])
        var next = state
        next.userID = userID
        try save(next)
    }

    private func sendReport(_ event: ReportEvent, publishID: String) async throws {
        guard let deviceID = state.deviceID else { throw PushClientError.notStarted }
        var fields: [String: Any] = ["event": event.rawValue, "deviceId": deviceID, "publishId": publishID,
                                     "timestampSecs": Int(Date().timeIntervalSince1970)]
        if let user = state.userID { fields["userId"] = user }
        let body = try JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])
        do {
            _ = try await request("POST", "/reporting_api/v2/instances/\(Self.escape(instanceID))/events", body: body)
        } catch let notFound as NotFound {
            throw PushClientError.instanceNotFound(notFound.description)
        }
    }

    /// A call on this device. On 404 the device is registered again (interests and user replayed) and the call is
    /// repeated once on the new id.
    func deviceRequest(_ method: String, _ suffix: String, body: Data? = nil,
                       headers: [String: String] = [:]) async throws -> Data {
        guard let deviceID = state.deviceID else { throw PushClientError.notStarted }
        do {
            return try await request(method, "\(devicesPath)/\(Self.escape(deviceID))\(suffix)", body: body, headers: headers)
        } catch is NotFound {
            try await recreateDevice()
            guard let newID = state.deviceID else { throw PushClientError.notStarted }
            do {
                return try await request(method, "\(devicesPath)/\(Self.escape(newID))\(suffix)", body: body, headers: headers)
            } catch let notFound as NotFound {
                throw PushClientError.badRequest("the device was not found again after registering: \(notFound.description)")
            }
        }
    }

    /// The SDK's `recreateDevice`: register the stored token again, then restore interests and the user.
    private func recreateDevice() async throws {
        guard let registration = state.registration else { throw PushClientError.notStarted }
        let user = state.userID
        var next = state
        next.userID = nil
        try save(next)
        _ = try await register(registration)
        if let user {
            if let tokenProvider {
                try await sendUser(user, tokenProvider: tokenProvider)
            }
            // Without a token provider the binding cannot be proven again: the user stays unbound, as in the SDK.
        }
    }

    /// A 404: each caller knows what it means (an unknown instance, a forgotten device, an already deleted one).
    struct NotFound: Error, CustomStringConvertible {
        var description: String
    }

    /// One call with the retry policy. - Throws: `PushClientError`, or `NotFound` on 404.
    func request(_ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> Data {
        guard let url = URL(string: path, relativeTo: baseURL)?.absoluteURL else {
            throw PushClientError.badRequest("cannot build a URL from \(baseURL) and \(path)")
        }
        var allHeaders = ["Content-Type": "application/json", "X-Pusher-Library": "push-server-client \(Self.version)"]
        allHeaders.merge(headers) { _, new in new }
        var attempt = 0
        while true {
            attempt += 1
            try Task.checkCancellation()
            var status: Int?
            var description: String?
            var data = Data()
            do {
                (status, data) = try await transport.send(method: method, url: url, headers: allHeaders, body: body)
                description = (try? JSONDecoder().decode(ErrorBody.self, from: data))?.description
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                description = "\(error)"
            }
            // 413/422 on the Live Activity calls (push-server's own): a bound or a refused member; the Beams rule
            // (retry) was made for the SDK's calls and would retry them forever.
            if let status, status == 413 || status == 422, path.contains("/live-activity") {
                throw PushClientError.refused(description ?? "\(status)")
            }
            switch RetryPolicy.decide(status: status, description: description) {
            case .success:
                return data
            case .fail(let error):
                throw error
            case .deviceNotFound:
                throw NotFound(description: description ?? "404")
            case .retry:
                if let max = retryPolicy.maxAttempts, attempt >= max {
                    throw PushClientError.gaveUp(attempts: attempt,
                                                 lastError: status.map { "\($0) \(description ?? "")" } ?? (description ?? ""))
                }
                try await sleep(retryPolicy.delay(beforeRetry: attempt))
            }
        }
    }

    /// The registered device's platform's devices (APNs before any registration).
    private var devicesPath: String { Self.devicesPath(instanceID, state.platform ?? .apns) }

    static func devicesPath(_ instanceID: String, _ platform: PushPlatform) -> String {
        "/device_api/v1/instances/\(escape(instanceID))/devices/\(platform.rawValue)"
    }

    private func interestsBody(_ interests: Set<String>) throws -> Data {
        try JSONSerialization.data(withJSONObject: ["interests": interests.sorted()], options: [.sortedKeys])
    }

    func save(_ next: DeviceState) throws {
        do {
            try store.save(next)
        } catch {
            throw PushClientError.storage("\(error)")
        }
        state = next
    }

    /// Interest names as the server accepts them (the Beams rule).
    static func validate(interest: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-=@,.;")
        guard !interest.isEmpty, interest.count <= 164, interest.allSatisfy({ allowed.contains($0) }) else {
            throw PushClientError.invalidInterest(interest)
        }
    }

    /// Percent-encodes a path segment (interest names and ids are plain already; this guards everything else).
    static func escape(_ segment: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~=@,;")
        return segment.addingPercentEncoding(withAllowedCharacters: allowed) ?? segment
    }
}
