import Foundation
import PushStore
import TestSupport
import XCTest

@testable import SQLiteStore

final class MigrationTests: StoreTestCase {
    /// The store with the steps before `migration` applied; `migration` and the later ones wait for the next open.
    private func openBefore(_ migration: String, line: UInt = #line) async throws -> SQLitePushStore {
        let index = try XCTUnwrap(Schema.migrations.firstIndex(of: migration), line: line)
        return try await SQLitePushStore.open(
            configuration(), migrator: Migrator(migrations: Array(Schema.migrations[..<index])))
    }

    func testEmptyDatabaseMigratesToNewestVersionInWALMode() async throws {
        let store = try await openStore()
        try await store.close()
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        XCTAssertEqual(try Migrator.version(of: connection), Schema.migrations.count)
        XCTAssertEqual(try connection.first("PRAGMA journal_mode") { $0.text(0) }, "wal")
    }

    func testReopeningAtNewestVersionChangesNothing() async throws {
        let first = try await openStore()
        let device = try await register(first, 1)
        try await first.close()
        let second = try await openStore()
        let found = try await second.device(instanceID: instance, id: device.id)
        XCTAssertEqual(found, device)
        try await second.close()
    }

    func testOlderDatabaseIsUpgradedKeepingItsData() async throws {
        let v1 = ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"]
        let v2 = v1 + ["ALTER TABLE notes ADD COLUMN author TEXT NOT NULL DEFAULT 'unknown'"]
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        XCTAssertEqual(try Migrator(migrations: v1).migrate(connection, logger: .disabled), 0)
        try connection.run("INSERT INTO notes (body) VALUES ('kept')")
        XCTAssertEqual(try Migrator(migrations: v2).migrate(connection, logger: .disabled), 1)
        XCTAssertEqual(try Migrator.version(of: connection), 2)
        let row = try connection.first("SELECT body, author FROM notes") { ($0.text(0), $0.text(1)) }
        XCTAssertEqual(row?.0, "kept")
        XCTAssertEqual(row?.1, "unknown")
    }

    func testInterestCountsMigrationCountsTheRowsAlreadyThere() async throws {
        let old = try await openBefore(Schema.interestCounts)
        let a = try await register(old, 1)
        let b = try await register(old, 2)
        _ = try await old.setInterests(instanceID: instance, deviceID: a.id, interests: ["x", "y", "z"])
        _ = try await old.setInterests(instanceID: instance, deviceID: b.id, interests: ["x"])
        try await old.close()
        let store = try await openStore()
        let limits = InterestLimits(maxSubscriptionsPerInstance: 5, maxInterestsPerInstance: 3)
        await XCTAssertThrowsAsync(PushStoreError.interestLimitReached) {  // x, y, z were counted
            _ = try await store.addInterest(instanceID: self.instance, deviceID: b.id, interest: "w", limits: limits)
        }
        _ = try await store.addInterest(instanceID: instance, deviceID: b.id, interest: "y", limits: limits)  // 5
        await XCTAssertThrowsAsync(PushStoreError.subscriptionLimitReached) {  // the 5 subscriptions were counted
            _ = try await store.addInterest(instanceID: self.instance, deviceID: b.id, interest: "z", limits: limits)
        }
        try await store.close()
    }

    /// Step 20 stores answered refs as ranges: a publish in flight across it, whose refs the release before stored
    /// one row each, resumes skipping the same refs, combines them with ranges written after the step, and its rows
    /// are deleted (not only hidden) once the cursor covers them.
    func testAnsweredRangesMigrationKeepsThePerRefRowsOfAPublishInFlight() async throws {
        let old = try await openBefore(Schema.answeredRanges)
        let claimedAt = Date(millisecondsSince1970: 1_000)
        let job = try await AnsweredRefsJob.claim(on: old, instanceID: instance, now: claimedAt)
        try await old.close()
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        try connection.execute(job.oldProgressSQL)
        let store = try await openStore()
        let reads = try await job.afterTheStep(on: store, claimedAt: claimedAt)
        XCTAssertEqual(reads, AnsweredRefsJob.expected)
        try await store.close()
        XCTAssertEqual(try connection.first("SELECT count(*) FROM publish_answered") { $0.int64(0) }, 0)
    }

    /// Step 19 indexes the open jobs by instance for the ranked claim: jobs queued before it are found by it.
    func testOpenJobsByInstanceMigrationIndexesTheJobsQueuedBefore() async throws {
        try await assertJobsQueuedBeforeAreClaimedInRankAfter(Schema.openJobsByInstance)
    }

    /// Jobs queued on a database migrated up to just before `migration` are claimed after it, in the ranked claim's
    /// order.
    private func assertJobsQueuedBeforeAreClaimedInRankAfter(_ migration: String, line: UInt = #line) async throws {
        let old = try await openBefore(migration, line: line)
        try await RankedClaimJobs.enqueue(on: old, createdAt: Date(millisecondsSince1970: 1_000))
        try await old.close()
        let store = try await openStore()
        let claimed = try await RankedClaimJobs.claimTwice(from: store, now: Date(millisecondsSince1970: 2_000))
        XCTAssertEqual(claimed, ["p3", "p1"], line: line)
        try await store.close()
    }

    /// Step 21 spells the CHECKs on lists of three or more values as comparisons joined by OR: none such is left in
    /// the stored schema, jobs queued before the step are claimed after it, and each constraint still takes the
    /// values of its list and refuses any other.
    func testListChecksMigrationKeepsTheJobsAndTheConstraints() async throws {
        try await assertJobsQueuedBeforeAreClaimedInRankAfter(Schema.checksWithoutListTables)
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        let list = try NSRegularExpression(pattern: #"CHECK \(\w+ IN \('[^']*'(, '[^']*'){2,}\)\)"#)
        try connection.query("SELECT name, sql FROM sqlite_schema WHERE type = 'table'") { row in
            let sql = row.text(1)
            XCTAssertNil(list.firstMatch(in: sql, range: NSRange(sql.startIndex..., in: sql)), row.text(0))
        }
        let refused = [
            """
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at)
                VALUES ('i', 'p', 'pigeons', '[]', x'00', 0)
            """,
            "UPDATE publish_jobs SET state = 'lost'",
            """
            INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
                VALUES ('x-1', 'i', 'carrier-pigeon', 't', 'production', 0, 0)
            """,
            "INSERT INTO webhooks (url, body, headers, state, next_attempt_at, created_at) VALUES ('u', x'', '', 'lost', 0, 0)",
            """
            INSERT INTO beams_forwards (instance_id, kind, key, body, next_attempt_at, created_at)
                VALUES ('i', 'pigeons', 'k', x'', 0, 0)
            """,
            """
            INSERT INTO beams_forwards (instance_id, kind, key, body, state, next_attempt_at, created_at)
                VALUES ('i', 'retire_device', 'k', x'', 'lost', 0, 0)
            """,
        ]
        for sql in refused { XCTAssertThrowsError(try connection.run(sql), sql) }
        let taken = [
            "UPDATE publish_jobs SET state = 'failed' WHERE publish_id = 'p2'",
            """
            INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
                VALUES ('x-2', 'i', 'hms', 't', 'production', 0, 0)
            """,
            "INSERT INTO webhooks (url, body, headers, state, next_attempt_at, created_at) VALUES ('u', x'', '', 'gave_up', 0, 0)",
            """
            INSERT INTO beams_forwards (instance_id, kind, key, body, state, next_attempt_at, created_at)
                VALUES ('i', 'retire_device', 'k', x'', 'failed', 0, 0)
            """,
        ]
        for sql in taken { XCTAssertEqual(try connection.run(sql), 1, sql) }
        XCTAssertEqual(try connection.first("PRAGMA integrity_check") { $0.text(0) }, "ok")
    }

    /// Step 18 makes broadcasts a job kind of their own: a broadcast stored before (an `interests` job told apart
    /// only by its id) reads back as `channels`, an interests publish stays one, the step before refuses a
    /// `channels` job and the step takes one; an unknown kind is still refused.
    func testChannelPublishesMigrationRelabelsStoredBroadcasts() async throws {
        let old = try await openBefore(Schema.channelPublishes)
        let jobs = ChannelKindJobs(instanceID: instance, createdAt: Date(millisecondsSince1970: 1_000))
        let refused = try await jobs.queueBeforeTheStep(on: old)
        XCTAssertTrue(refused, "the step before refuses a channels job")
        try await old.close()
        let store = try await openStore()
        let kinds = try await jobs.kindsAfterTheStep(on: store)
        XCTAssertEqual(kinds.broadcastBefore, .channels)
        XCTAssertEqual(kinds.interestsBefore, .interests)
        XCTAssertEqual(kinds.channelsAfter, .channels)
        try await store.close()
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        XCTAssertThrowsError(
            try connection.run(
                """
                INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at)
                    VALUES ('i', 'p', 'pigeons', '[]', x'00', 0)
                """))
        XCTAssertEqual(try connection.first("PRAGMA integrity_check") { $0.text(0) }, "ok")
    }

    /// Step 11 widens the `platform` CHECK for `hms` the same way; a `unifiedpush` device of before is kept too.
    func testHMSMigrationWidensThePlatformCheckKeepingDevices() async throws {
        try await assertMigrationWidensThePlatformCheck(
            Schema.hmsPlatform, to: .hms, token: "h", alsoKeeping: .unifiedpush)
    }

    /// Step 9 widens the `platform` CHECK in place: a database of step 8 keeps its devices, takes `unifiedpush`
    /// devices, and still refuses a platform nobody knows (the CHECK is widened, not dropped).
    func testUnifiedPushMigrationWidensThePlatformCheckKeepingDevices() async throws {
        try await assertMigrationWidensThePlatformCheck(Schema.unifiedPushPlatform, to: .unifiedpush, token: "{}")
    }

    /// A database migrated up to the step before `migration` keeps its devices (an APNs one, and one of `earlier`)
    /// through it, refuses a `platform` device before it and takes one after it; a platform nobody knows is still
    /// refused, and the file passes `integrity_check`.
    private func assertMigrationWidensThePlatformCheck(
        _ migration: String, to platform: Platform, token newToken: String, alsoKeeping earlier: Platform? = nil,
        line: UInt = #line
    ) async throws {
        let old = try await openBefore(migration, line: line)
        var kept = [try await register(old, 1)]
        if let earlier {
            kept.append(
                try await old.registerDevice(DeviceRegistration(instanceID: instance, platform: earlier, token: "{}"))
                    .device)
        }
        do {
            _ = try await old.registerDevice(
                DeviceRegistration(instanceID: instance, platform: platform, token: newToken))
            XCTFail("the step before refuses a \(platform) device", line: line)
        } catch {}
        try await old.close()
        let store = try await openStore()
        for device in kept {
            let found = try await store.device(instanceID: instance, id: device.id)
            XCTAssertEqual(found, device, line: line)
        }
        let added = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: platform, token: newToken))
        XCTAssertEqual(added.device.platform, platform, line: line)
        try await store.close()
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        XCTAssertThrowsError(
            try connection.run(
                """
                INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
                    VALUES ('x-1', 'i', 'carrier-pigeon', 't', 'production', 0, 0)
                """), line: line)
        XCTAssertEqual(try connection.first("PRAGMA integrity_check") { $0.text(0) }, "ok", line: line)
    }

    func testFailingMigrationLeavesVersionUnchanged() throws {
        let connection = try SQLiteConnection(path: databasePath)
        defer { try? connection.close() }
        let broken = ["CREATE TABLE a (x)", "CREATE TABLE b (y); CREATE TABLE a (x)"]
        XCTAssertThrowsError(try Migrator(migrations: broken).migrate(connection, logger: .disabled)) { error in
            XCTAssertTrue(error is SQLiteError)
        }
        XCTAssertEqual(try Migrator.version(of: connection), 1)
        XCTAssertNil(try connection.first("SELECT name FROM sqlite_master WHERE name = 'b'") { $0.text(0) })
    }

    func testRefusesDatabaseFromNewerVersion() async throws {
        let connection = try SQLiteConnection(path: databasePath)
        try connection.execute("PRAGMA user_version = \(Schema.migrations.count + 1)")
        try connection.close()
        await XCTAssertThrowsAsync(
            PushStoreError.unsupportedSchemaVersion(
                found: Schema.migrations.count + 1, newestKnown: Schema.migrations.count)
        ) {
            _ = try await self.openStore()
        }
    }

    func testOpenFailsWithSQLiteErrorForAPathThatIsADirectory() async {
        let configuration = SQLitePushStore.Configuration(path: directory.path)
        do {
            _ = try await SQLitePushStore.open(configuration)
            XCTFail("opened a directory as a database")
        } catch let error as SQLiteError {
            XCTAssertFalse(error.message.isEmpty)
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    func testOpenFailsAsCannotOpenWhenTheDirectoryIsAFile() async throws {
        let file = directory.appendingPathComponent("plain-file")
        try Data().write(to: file)
        let configuration = SQLitePushStore.Configuration(path: file.appendingPathComponent("db.sqlite").path)
        let nested = SQLitePushStore.Configuration(path: file.appendingPathComponent("sub/db.sqlite").path)
        do {
            _ = try await SQLitePushStore.open(nested)
            XCTFail("created a directory below a regular file")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .cannotOpen)
            XCTAssertTrue(error.detail.contains("cannot create the database directory"), error.detail)
        }
        do {
            _ = try await SQLitePushStore.open(configuration)
            XCTFail("opened a database below a regular file")
        } catch let error as StoreUnavailableError {
            XCTAssertEqual(error.reason, .cannotOpen)
            XCTAssertTrue(error.detail.hasSuffix("plain-file is not a directory"), error.detail)
        } catch {
            XCTFail("unexpected \(error)")
        }
    }
}
