import Foundation
import PushStore
import TestSupport
import XCTest

@testable import PostgreSQLStore

final class PostgreSQLMigrationTests: PostgreSQLTestCase {
    /// One connection: what the stores these tests open use.
    private var oneConnection: PostgreSQLPushStore.Configuration {
        var configuration = PostgreSQLPushStore.Configuration(connectionString: connectionString)
        configuration.poolSize = 1
        return configuration
    }

    /// The store with the steps before `migration` applied; `migration` and the later ones wait for the next open.
    private func openBefore(_ migration: String, line: UInt = #line) async throws -> PostgreSQLPushStore {
        let index = try XCTUnwrap(PostgreSQLSchema.migrations.firstIndex(of: migration), line: line)
        return try await PostgreSQLPushStore.open(
            oneConnection, migrator: PostgreSQLMigrator(migrations: Array(PostgreSQLSchema.migrations[..<index])))
    }

    func testNodesStartingTogetherApplyEachMigrationOnce() async throws {
        var configuration = PostgreSQLPushStore.Configuration(connectionString: connectionString)
        configuration.poolSize = 1
        let stores = try await withThrowingTaskGroup(of: PostgreSQLPushStore.self) { [configuration] group in
            for _ in 0..<4 { group.addTask { try await PostgreSQLPushStore.open(configuration) } }
            return try await group.reduce(into: [PostgreSQLPushStore]()) { $0.append($1) }
        }
        XCTAssertEqual(
            try scalar("SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_migrations"),
            (1...PostgreSQLSchema.migrations.count).map(String.init).joined(separator: ","))
        for store in stores { try await store.close() }
    }

    func testRefusesADatabaseMigratedByANewerProgram() async throws {
        let store = try await openNode(poolSize: 1)
        try await store.close()
        let newer = PostgreSQLSchema.migrations.count + 1
        try cluster.sql("INSERT INTO schema_migrations (version) VALUES (\(newer))", database: database)
        do {
            _ = try await openNode(poolSize: 1)
            XCTFail("opened a database from the future")
        } catch {
            XCTAssertEqual(
                error as? PushStoreError,
                .unsupportedSchemaVersion(found: newer, newestKnown: PostgreSQLSchema.migrations.count))
        }
    }

    func testAppliesOnlyTheMissingSteps() async throws {
        var configuration = PostgreSQLPushStore.Configuration(connectionString: connectionString)
        configuration.poolSize = 1
        let first = try await PostgreSQLPushStore.open(
            configuration, migrator: PostgreSQLMigrator(migrations: ["CREATE TABLE step_one (a int)"]))
        try await first.close()
        let second = try await PostgreSQLPushStore.open(
            configuration,
            migrator: PostgreSQLMigrator(migrations: ["CREATE TABLE step_one (a int)", "CREATE TABLE step_two (b int)"])
        )
        try await second.close()
        XCTAssertEqual(try scalar("SELECT count(*) FROM schema_migrations"), "2")
        XCTAssertEqual(try scalar("SELECT count(*) FROM pg_tables WHERE tablename IN ('step_one', 'step_two')"), "2")
    }

    /// Migration 2 (scheduled publishes) on a database that version 1 filled: the rows stay, a queued job of then
    /// is claimable at once (no `not_before`), the new end states are accepted, and a device gains a time zone.
    func testInterestCountsMigrationCountsTheRowsAlreadyThere() async throws {
        let old = try await openBefore(PostgreSQLSchema.interestCounts)
        let a = try await old.registerDevice(DeviceRegistration(instanceID: instance, token: token(1))).device.id
        let b = try await old.registerDevice(DeviceRegistration(instanceID: instance, token: token(2))).device.id
        _ = try await old.setInterests(instanceID: instance, deviceID: a, interests: ["x", "y", "z"])
        _ = try await old.setInterests(instanceID: instance, deviceID: b, interests: ["x"])
        try await old.close()
        let store = try await PostgreSQLPushStore.open(oneConnection)
        XCTAssertEqual(try scalar("SELECT subscriptions || ',' || interests FROM instance_device_counts"), "4,3")
        _ = try await store.deleteDevice(instanceID: instance, id: a)
        XCTAssertEqual(
            try scalar("SELECT subscriptions || ',' || interests FROM instance_device_counts"), "1,1",
            "the triggers keep counting from there")
        try await store.close()
    }

    /// Step 14: one statement inserting many devices, and one inserting many subscriptions, each update the
    /// instance's count row once (its row versions show in its `ctid`: one per update in this transaction), and
    /// the counts are exact. With the per-row triggers of steps 1 and 5 every row wrote a version: (0,102) here.
    func testBulkInsertsUpdateTheCountRowOncePerStatement() async throws {
        let store = try await openNode(poolSize: 1)
        try await store.close()
        _ = try cluster.sql(
            """
            INSERT INTO instance_device_counts (instance_id, devices) VALUES ('bulk', 0);
            INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
                SELECT 'apns-bulk-' || n, 'bulk', 'apns', lpad(to_hex(n), 64, '0'), 'sandbox', 0, 0
                FROM generate_series(1, 50) n;
            INSERT INTO interests (instance_id, name) VALUES ('bulk', 'a');
            INSERT INTO device_interests (interest_id, device_id)
                SELECT i.id, d.id FROM interests i, devices d WHERE i.instance_id = 'bulk' AND d.instance_id = 'bulk';
            """, database: database)
        XCTAssertEqual(
            try scalar(
                "SELECT devices || ',' || subscriptions || ',' || interests FROM instance_device_counts WHERE instance_id = 'bulk'"
            ),
            "50,50,1")
        // Inserted, +50 devices, +1 interest (still per row), +50 subscriptions: four versions.
        XCTAssertEqual(try scalar("SELECT ctid::text FROM instance_device_counts WHERE instance_id = 'bulk'"), "(0,4)")
        // A one-row registration after it still counts.
        _ = try cluster.sql(
            """
            INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
                VALUES ('apns-bulk-x', 'bulk', 'apns', 'ff', 'sandbox', 0, 0)
            """, database: database)
        XCTAssertEqual(try scalar("SELECT devices FROM instance_device_counts WHERE instance_id = 'bulk'"), "51")
    }

    /// Step 7 replaces the `platform` CHECK: devices of before stay, `unifiedpush` is accepted, nonsense is not.
    func testUnifiedPushMigrationWidensThePlatformCheckKeepingDevices() async throws {
        try await assertMigrationWidensThePlatformCheck(
            PostgreSQLSchema.unifiedPushPlatform, to: .unifiedpush, token: "{}")
    }

    /// Step 9, the same for `hms`.
    func testHMSMigrationWidensThePlatformCheckKeepingDevices() async throws {
        try await assertMigrationWidensThePlatformCheck(PostgreSQLSchema.hmsPlatform, to: .hms, token: "h")
    }

    /// A database migrated up to the step before `migration` keeps its devices through it, refuses a `platform`
    /// device before it and takes one after it; a platform nobody knows is still refused (widened, not dropped).
    private func assertMigrationWidensThePlatformCheck(
        _ migration: String, to platform: Platform, token newToken: String, line: UInt = #line
    ) async throws {
        let old = try await openBefore(migration, line: line)
        let kept = try await old.registerDevice(DeviceRegistration(instanceID: instance, token: token(1))).device
        do {
            _ = try await old.registerDevice(
                DeviceRegistration(instanceID: instance, platform: platform, token: newToken))
            XCTFail("the step before refuses a \(platform) device", line: line)
        } catch {}
        try await old.close()
        let store = try await PostgreSQLPushStore.open(oneConnection)
        let found = try await store.device(instanceID: instance, id: kept.id)
        XCTAssertEqual(found?.token, kept.token, line: line)
        let added = try await store.registerDevice(
            DeviceRegistration(instanceID: instance, platform: platform, token: newToken))
        XCTAssertEqual(added.device.platform, platform, line: line)
        try await store.close()
        XCTAssertThrowsError(
            try cluster.sql(
                """
                INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
                    VALUES ('x-1', '\(instance)', 'carrier-pigeon', 't', 'production', 0, 0)
                """, database: database), line: line)
    }

    /// Step 17: a broadcast stored before (an `interests` job told apart only by its id) reads back as
    /// `channels`, an interests publish stays one, the step before refuses a `channels` job and the step takes one;
    /// an unknown kind is still refused.
    func testChannelPublishesMigrationRelabelsStoredBroadcasts() async throws {
        let old = try await openBefore(PostgreSQLSchema.channelPublishes)
        let jobs = ChannelKindJobs(instanceID: instance, createdAt: now)
        let refused = try await jobs.queueBeforeTheStep(on: old)
        XCTAssertTrue(refused, "the step before refuses a channels job")
        try await old.close()
        let store = try await PostgreSQLPushStore.open(oneConnection)
        let kinds = try await jobs.kindsAfterTheStep(on: store)
        XCTAssertEqual(kinds.broadcastBefore, .channels)
        XCTAssertEqual(kinds.interestsBefore, .interests)
        XCTAssertEqual(kinds.channelsAfter, .channels)
        try await store.close()
        XCTAssertThrowsError(
            try cluster.sql(
                """
                INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at)
                    VALUES ('\(instance)', 'p', 'pigeons', '{}', '\\x00', 0)
                """, database: database))
    }

    /// Step 19 stores answered refs as ranges: a publish in flight across it, whose refs the release before stored
    /// one row each, resumes skipping the same refs, combines them with ranges written after the step, and its rows
    /// are deleted (not only hidden) once the cursor covers them.
    func testAnsweredRangesMigrationKeepsThePerRefRowsOfAPublishInFlight() async throws {
        let old = try await openBefore(PostgreSQLSchema.answeredRanges)
        let job = try await AnsweredRefsJob.claim(on: old, instanceID: instance, now: now)
        try await old.close()
        _ = try cluster.sql(job.oldProgressSQL, database: database)
        XCTAssertEqual(try scalar("SELECT count(*) FROM publish_answered"), "5")
        let store = try await PostgreSQLPushStore.open(oneConnection)
        let reads = try await job.afterTheStep(on: store, claimedAt: now)
        XCTAssertEqual(reads, AnsweredRefsJob.expected)
        try await store.close()
        XCTAssertEqual(try scalar("SELECT count(*) FROM publish_answered"), "0")
    }

    /// Step 18 indexes the open jobs by instance for the ranked claim: jobs queued before it are found by it, the
    /// instance without runs first, then the busy instance's oldest.
    func testOpenJobsByInstanceMigrationIndexesTheJobsQueuedBefore() async throws {
        let old = try await openBefore(PostgreSQLSchema.openJobsByInstance)
        try await RankedClaimJobs.enqueue(on: old, createdAt: now)
        try await old.close()
        XCTAssertEqual(
            try scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'publish_jobs_open_by_instance'"), "0")
        let store = try await PostgreSQLPushStore.open(oneConnection)
        XCTAssertEqual(
            try scalar("SELECT count(*) FROM pg_indexes WHERE indexname = 'publish_jobs_open_by_instance'"), "1")
        let claimed = try await RankedClaimJobs.claimTwice(from: store, now: now)
        XCTAssertEqual(claimed, ["p3", "p1"])
        try await store.close()
    }

    func testScheduledPublishesMigrationKeepsVersion1Rows() async throws {
        var configuration = PostgreSQLPushStore.Configuration(connectionString: connectionString)
        configuration.poolSize = 1
        let now = self.now
        configuration.clock = { now }
        let old = try await PostgreSQLPushStore.open(
            configuration, migrator: PostgreSQLMigrator(migrations: [PostgreSQLSchema.version1]))
        try await old.close()
        XCTAssertEqual(try scalar("SELECT max(version) FROM schema_migrations"), "1")
        try cluster.sql(
            """
            INSERT INTO devices (public_id, instance_id, platform, token, environment, created_at, last_registered_at)
                VALUES ('apns-old', '\(instance)', 'apns', '\(token(1))', 'production', 0, 0);
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, created_at)
                VALUES ('\(instance)', 'queued-before', 'interests', '{news}', '\\x00', 0),
                       ('\(instance)', 'queued-too', 'interests', '{news}', '\\x00', 0);
            INSERT INTO publish_jobs (instance_id, publish_id, kind, targets, payload, state, created_at, finished_at)
                VALUES ('\(instance)', 'done-before', 'interests', '{news}', '\\x00', 'finished', 0, 0)
            """, database: database)

        let store = try await PostgreSQLPushStore.open(configuration)
        XCTAssertEqual(
            try scalar("SELECT max(version) FROM schema_migrations"), String(PostgreSQLSchema.migrations.count))
        let done = try await store.publishStatus(instanceID: instance, publishID: "done-before")
        XCTAssertEqual(done?.state, .finished)
        XCTAssertEqual(done?.cancelRequested, false)
        let claimed = try await store.claimJob(workerID: "w1", leaseDuration: .seconds(30), now: now)
        XCTAssertEqual(claimed?.job.publishID, "queued-before")
        XCTAssertNil(claimed?.job.notBefore)
        let job = try XCTUnwrap(claimed)
        try await store.finishJob(job.id, workerID: "w1", state: .expired, targetsTotal: 0, summary: nil, now: now)
        let cancelled = try await store.cancelPublish(instanceID: instance, publishID: "queued-too", now: now)
        guard case .cancelled(let status)? = cancelled else { return XCTFail("\(String(describing: cancelled))") }
        XCTAssertEqual(status.state, .cancelled)
        let statistics = try await store.statistics(instanceID: instance, since: Date(millisecondsSince1970: 0))
        XCTAssertEqual(statistics.publishesByState, [.finished: 1, .expired: 1, .cancelled: 1])
        let zoned = try await store.updateTimeZone(
            instanceID: instance, deviceID: "apns-old", timeZone: "Europe/Vienna")
        XCTAssertTrue(zoned)
        let device = try await store.device(instanceID: instance, id: "apns-old")
        XCTAssertEqual(device?.timeZone, "Europe/Vienna")
        try await store.close()
        // The widened check still refuses a state nobody defined.
        XCTAssertThrowsError(
            try cluster.sql(
                "UPDATE publish_jobs SET state = 'paused' WHERE publish_id = 'done-before'", database: database))
    }
}
