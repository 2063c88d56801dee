import Foundation
import PushStore

extension InMemoryState {
    func ref(instanceID: String, deviceID: String) -> Int64? {
        devicesByPublicID[InstanceKey(instanceID: instanceID, name: deviceID)]
    }

    func device(instanceID: String, id: String) -> Device? {
        ref(instanceID: instanceID, deviceID: id).flatMap { devices[$0]?.device }
    }

    func device(instanceID: String, platform: Platform, token: String) -> Device? {
        devicesByToken[TokenKey(instanceID: instanceID, platform: platform, token: token)].flatMap {
            devices[$0]?.device
        }
    }

    mutating func register(_ registration: DeviceRegistration, now: Date, maxDevicesPerInstance: Int) throws
        -> RegisteredDevice
    {
        let now = now.stored
        let key = TokenKey(
            instanceID: registration.instanceID, platform: registration.platform, token: registration.token)
        if let ref = devicesByToken[key], var stored = devices[ref] {
            // Re-registration: the same device, with the fields a registration may change.
            stored.device.lastRegisteredAt = now
            stored.device.bundleID = registration.bundleID ?? stored.device.bundleID
            stored.device.metadata = registration.metadata
            if registration.environmentDeclared { stored.device.environment = registration.environment }
            stored.device.environmentDeclared = stored.device.environmentDeclared || registration.environmentDeclared
            stored.device.invalidatedAt = nil
            devices[ref] = stored
            return RegisteredDevice(device: stored.device, created: false, interests: stored.interests.sorted())
        }
        if devicesPerInstance[registration.instanceID, default: 0] >= maxDevicesPerInstance {
            throw PushStoreError.deviceLimitReached
        }
        try requireRoom(for: 1)
        lastDeviceRef += 1
        let device = Device(
            id: Device.makeID(platform: registration.platform, at: now), instanceID: registration.instanceID,
            platform: registration.platform, token: registration.token, environment: registration.environment,
            environmentDeclared: registration.environmentDeclared, bundleID: registration.bundleID,
            metadata: registration.metadata, userID: nil, createdAt: now, lastRegisteredAt: now, lastResult: nil,
            invalidatedAt: nil)
        devices[lastDeviceRef] = StoredDevice(ref: lastDeviceRef, device: device, interests: [])
        devicesByToken[key] = lastDeviceRef
        devicesByPublicID[InstanceKey(instanceID: device.instanceID, name: device.id)] = lastDeviceRef
        devicesPerInstance[device.instanceID, default: 0] += 1
        return RegisteredDevice(device: device, created: true, interests: [])
    }

    /// Registers in order, all or nothing.
    mutating func register(_ registrations: [DeviceRegistration], now: Date) throws -> [RegisteredDevice] {
        try requireRoom(for: registrations.count)
        return try registrations.map { try register($0, now: now, maxDevicesPerInstance: .max) }
    }

    /// Removes the device with its interests (dropping interests nobody follows any more) and user binding.
    mutating func remove(ref: Int64) {
        guard let stored = devices.removeValue(forKey: ref) else { return }
        removeLiveActivities(ofDevice: ref)
        let device = stored.device
        for interest in stored.interests { unfollow(instanceID: device.instanceID, interest: interest, ref: ref) }
        devicesByPublicID[InstanceKey(instanceID: device.instanceID, name: device.id)] = nil
        devicesByToken[TokenKey(instanceID: device.instanceID, platform: device.platform, token: device.token)] = nil
        if let user = device.userID { unbind(instanceID: device.instanceID, userID: user, ref: ref) }
        devicesPerInstance[device.instanceID, default: 0] -= 1
        if devicesPerInstance[device.instanceID] == 0 { devicesPerInstance[device.instanceID] = nil }
    }

    mutating func deleteDevice(instanceID: String, id: String) -> Bool {
        guard let ref = ref(instanceID: instanceID, deviceID: id) else { return false }
        logRemoval(ref: ref, reason: DeviceInvalidation.deviceDeleted)
        remove(ref: ref)
        return true
    }

    /// Logs the device `ref` as removed through the API (the invalidation log), before it is removed.
    mutating func logRemoval(ref: Int64, reason: String) {
        guard let device = devices[ref]?.device else { return }
        lastInvalidationID += 1
        var record = DeviceInvalidation.removal(
            of: (device.instanceID, device.id, device.platform.rawValue, device.token, device.userID), reason: reason,
            at: Date().stored)
        record.id = lastInvalidationID
        invalidations.append((record, false))
    }

    mutating func updateTimeZone(instanceID: String, deviceID: String, timeZone: String?) -> Bool {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID) else { return false }
        devices[ref]?.device.timeZone = timeZone
        return true
    }

    mutating func updateMetadata(instanceID: String, deviceID: String, metadata: String) -> Bool {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID) else { return false }
        devices[ref]?.device.metadata = metadata
        return true
    }

    mutating func updateToken(instanceID: String, deviceID: String, platform: Platform, token: String, now: Date)
        throws -> Bool
    {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID), let stored = devices[ref],
            stored.device.platform == platform
        else { return false }
        let key = TokenKey(instanceID: instanceID, platform: platform, token: token)
        if let other = devicesByToken[key], other != ref {
            if let holder = devices[other]?.device, holder.invalidatedAt == nil, let owner = holder.userID,
                owner != stored.device.userID
            {
                throw PushStoreError.tokenHeldByAnotherUser
            }
            remove(ref: other)
        }
        devicesByToken[TokenKey(instanceID: instanceID, platform: platform, token: stored.device.token)] = nil
        devicesByToken[key] = ref
        devices[ref]?.device.token = token
        devices[ref]?.device.lastRegisteredAt = now.stored
        devices[ref]?.device.invalidatedAt = nil
        return true
    }

    // MARK: Interests

    func interests(instanceID: String, deviceID: String, limit: Int, cursor: String?) -> InterestPage? {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID), let stored = devices[ref] else { return nil }
        let limit = max(1, limit)
        let after = stored.interests.filter { $0 > (cursor ?? "") }.sorted()
        let page = Array(after.prefix(limit))
        return InterestPage(interests: page, nextCursor: after.count > limit ? page.last : nil)
    }

    private mutating func follow(instanceID: String, interest: String, ref: Int64) {
        guard devices[ref]?.interests.insert(interest).inserted == true else { return }
        let key = InstanceKey(instanceID: instanceID, name: interest)
        if followers[key] == nil { interestsPerInstance[instanceID, default: 0] += 1 }
        followers[key, default: []].insert(ref)
        subscriptionsPerInstance[instanceID, default: 0] += 1
    }

    private mutating func unfollow(instanceID: String, interest: String, ref: Int64) {
        // `remove(ref:)` calls this after the device is gone: the follower set is what counts.
        devices[ref]?.interests.remove(interest)
        let key = InstanceKey(instanceID: instanceID, name: interest)
        guard followers[key]?.remove(ref) != nil else { return }
        subscriptionsPerInstance[instanceID, default: 0] -= 1
        if followers[key]?.isEmpty == true {
            followers[key] = nil
            interestsPerInstance[instanceID, default: 0] -= 1
        }
    }

    /// Replaces the device's set with `interests`. - Throws: the `limits` violation; nothing changes then.
    mutating func setInterests(
        instanceID: String, deviceID: String, interests wanted: Set<String>,
        limits: InterestLimits
    ) throws -> Bool {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID), let stored = devices[ref] else { return false }
        try apply(
            instanceID: instanceID, ref: ref, adding: wanted.subtracting(stored.interests),
            removing: stored.interests.subtracting(wanted), limits: limits)
        return true
    }

    /// Adds `interests` to the device's set. - Throws: the `limits` violation; nothing changes then.
    mutating func setInterests(
        instanceID: String, deviceID: String, adding interests: Set<String>,
        limits: InterestLimits
    ) throws -> Bool {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID), let stored = devices[ref] else { return false }
        try apply(
            instanceID: instanceID, ref: ref, adding: interests.subtracting(stored.interests), removing: [],
            limits: limits)
        return true
    }

    /// Checks the counts the change would leave against `limits` before changing anything (the in-memory store
    /// has no transaction to roll back).
    private mutating func apply(
        instanceID: String, ref: Int64, adding: Set<String>, removing: Set<String>,
        limits: InterestLimits
    ) throws {
        let subscriptions = Int64(subscriptionsPerInstance[instanceID, default: 0])
        let interests = Int64(interestsPerInstance[instanceID, default: 0])
        let created = adding.count { followers[InstanceKey(instanceID: instanceID, name: $0)] == nil }
        let dropped = removing.count { followers[InstanceKey(instanceID: instanceID, name: $0)] == [ref] }
        if let violation = limits.violation(
            before: (subscriptions, interests),
            after: (subscriptions + Int64(adding.count - removing.count), interests + Int64(created - dropped)))
        {
            throw violation
        }
        for name in removing { unfollow(instanceID: instanceID, interest: name, ref: ref) }
        for name in adding { follow(instanceID: instanceID, interest: name, ref: ref) }
    }

    mutating func removeInterest(instanceID: String, deviceID: String, interest: String) -> Bool {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID) else { return false }
        if devices[ref]?.interests.contains(interest) == true {
            unfollow(instanceID: instanceID, interest: interest, ref: ref)
        }
        return true
    }

    func subscriberCount(instanceID: String, interest: String) -> Int {
        let refs = followers[InstanceKey(instanceID: instanceID, name: interest)] ?? []
        return refs.count { devices[$0]?.device.invalidatedAt == nil }
    }

    // MARK: Users

    private mutating func unbind(instanceID: String, userID: String, ref: Int64) {
        let key = InstanceKey(instanceID: instanceID, name: userID)
        devicesByUser[key]?.remove(ref)
        if devicesByUser[key]?.isEmpty == true { devicesByUser[key] = nil }
    }

    mutating func setUser(instanceID: String, deviceID: String, userID: String, maxDevicesPerUser: Int) -> SetUserResult
    {
        guard let ref = ref(instanceID: instanceID, deviceID: deviceID), let stored = devices[ref] else {
            return .deviceNotFound
        }
        if stored.device.userID == userID { return .ok }
        if stored.device.userID != nil { return .differentUserAlreadySet }
        let key = InstanceKey(instanceID: instanceID, name: userID)
        let valid = (devicesByUser[key] ?? []).count { devices[$0]?.device.invalidatedAt == nil }
        if valid >= maxDevicesPerUser { return .userHasTooManyDevices }
        devices[ref]?.device.userID = userID
        devicesByUser[key, default: []].insert(ref)
        return .ok
    }

    mutating func deleteUser(instanceID: String, userID: String) -> Int {
        let refs = devicesByUser[InstanceKey(instanceID: instanceID, name: userID)] ?? []
        for ref in refs.sorted() {
            logRemoval(ref: ref, reason: DeviceInvalidation.userDeleted)
            remove(ref: ref)
        }
        return refs.count
    }

    /// Oldest first.
    func devices(instanceID: String, userID: String) -> [Device] {
        (devicesByUser[InstanceKey(instanceID: instanceID, name: userID)] ?? []).sorted().compactMap {
            devices[$0]?.device
        }
    }

    // MARK: Results

    /// Records results and applies their effects: Apple's 410 timestamp is when the token stopped being valid, so a
    /// device that registered at or after the evidence time keeps working (the app has re-sent the token since).
    mutating func apply(_ results: [DeviceResult]) {
        for result in results {
            guard var stored = devices[result.device] else { continue }
            let at = result.at.stored
            var evidence: Date?
            switch result.effect {
            case .none: break
            case .unregistered(let since): evidence = since.stored
            case .badToken: evidence = at
            case .environment(let corrected): stored.device.environment = corrected
            }
            stored.device.lastResult = DeliveryResult(status: result.status, reason: result.reason, at: at)
            if let evidence, stored.device.invalidatedAt == nil, stored.device.lastRegisteredAt < evidence {
                stored.device.invalidatedAt = at
                lastInvalidationID += 1
                let device = stored.device
                invalidations.append(
                    (
                        DeviceInvalidation(
                            id: lastInvalidationID, instanceID: device.instanceID, deviceID: device.id,
                            platform: device.platform.rawValue,
                            maskedToken: DeviceInvalidation.mask(token: device.token),
                            userID: device.userID, reason: result.invalidationReason, status: result.status,
                            providerTimestamp: result.providerTimestamp?.stored, at: at), false
                    ))
            }
            devices[result.device] = stored
        }
    }
}
