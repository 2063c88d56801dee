import Foundation
import PushStore
import SQL

/// The interest statements of one device, the same on SQLite and PostgreSQL; each runs inside the caller's
/// transaction. What differs stays per backend: the interest caps' counts (a trigger-kept table SQLite's one writer
/// reads, the instance's count row PostgreSQL locks), how a large set is written (SQLite in steps so other
/// instances' writes commit between them, PostgreSQL at once with arrays), and PostgreSQL's retry of a write that
/// raced the trigger deleting an unfollowed interest.
package enum InterestSQL {
    /// The device's interest names in byte order (the order of `page`).
    package static func names(deviceRef: Int64, on connection: some SQLConnection) throws -> [String] {
        try connection.fetchAll(
            """
            SELECT i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
            WHERE di.device_id = \(deviceRef) ORDER BY \(byteOrder: "i.name")
            """
        ) { try $0.decode(0, as: String.self) }
    }

    /// The device's interests after `cursor`, at most `limit`, in byte order, so that a cursor means the same on
    /// every backend and database locale; nil when there is no such device.
    package static func page(
        instanceID: String, deviceID: String, limit: Int, cursor: String?, on connection: some SQLConnection
    ) throws -> InterestPage? {
        // One row more than the page is read to learn whether another page follows: `limit + 1` must not overflow.
        let limit = min(max(1, limit), Int.max - 1)
        guard let ref = try DeviceSQL.ref(instanceID: instanceID, id: deviceID, on: connection) else { return nil }
        // Interest names are never empty, so "" sorts before every one of them.
        var names = try connection.fetchAll(
            """
            SELECT i.name FROM device_interests di JOIN interests i ON i.id = di.interest_id
            WHERE di.device_id = \(ref) AND \(byteOrder: "i.name") > \(cursor ?? "")
            ORDER BY \(byteOrder: "i.name") LIMIT \(limit + 1)
            """
        ) { try $0.decode(0, as: String.self) }
        let more = names.count > limit
        if more { names.removeLast() }
        return InterestPage(interests: names, nextCursor: more ? names.last : nil)
    }

    /// The device's interests, name to interest id.
    package static func current(deviceRef: Int64, on connection: some SQLConnection) throws -> [String: Int64] {
        var current: [String: Int64] = [:]
        try connection.forEachRow(
            """
            SELECT i.name, i.id FROM device_interests di JOIN interests i ON i.id = di.interest_id
            WHERE di.device_id = \(deviceRef)
            """
        ) { row in current[try row.decode(0)] = try row.decode(1) }
        return current
    }

    /// The id of the instance's interest `name`, created on first use.
    package static func id(instanceID: String, name: String, on connection: some SQLConnection) throws -> Int64 {
        let select: SQLQuery = "SELECT id FROM interests WHERE instance_id = \(instanceID) AND name = \(name)"
        if let id = try connection.fetchOne(select, { try $0.decode(0, as: Int64.self) }) { return id }
        // Another node may create it between the two statements: then nothing is inserted and it is read again.
        let inserted = try connection.fetchOne(
            """
            INSERT INTO interests (instance_id, name) VALUES (\(instanceID), \(name)) \
            \(upsert: ["instance_id", "name"]) \(returning: ["id"])
            """
        ) { try $0.decode(0, as: Int64.self) }
        if let inserted { return inserted }
        guard let id = try connection.fetchOne(select, { try $0.decode(0, as: Int64.self) }) else {
            throw SQLDecodingError.noSuchColumn("id")
        }
        return id
    }

    /// Follows `name` (a no-op when the device follows it already).
    package static func follow(
        _ name: String, instanceID: String, deviceRef: Int64, on connection: some SQLConnection
    ) throws {
        let interest = try id(instanceID: instanceID, name: name, on: connection)
        try connection.perform(
            """
            INSERT INTO device_interests (interest_id, device_id) VALUES (\(interest), \(deviceRef)) \
            \(upsert: ["interest_id", "device_id"])
            """)
    }

    /// Unfollows `name` (a no-op when the device does not follow it).
    package static func unfollow(
        _ name: String, instanceID: String, deviceRef: Int64, on connection: some SQLConnection
    ) throws {
        try connection.perform(
            """
            DELETE FROM device_interests
            WHERE device_id = \(deviceRef)
              AND interest_id = (SELECT id FROM interests WHERE instance_id = \(instanceID) AND name = \(name))
            """)
    }

    /// How many live devices follow the instance's interest.
    package static func subscriberCount(
        instanceID: String, interest: String, on connection: some SQLConnection
    ) throws -> Int {
        try connection.fetchOne(
            """
            SELECT count(*) FROM device_interests di JOIN devices d ON d.id = di.device_id
            WHERE di.interest_id = (SELECT id FROM interests WHERE instance_id = \(instanceID) AND name = \(interest))
              AND d.invalidated_at IS NULL
            """
        ) { try $0.decode(0, as: Int.self) } ?? 0
    }
}
