import PushStore
import SQL
import StoreSQL

/// The SQLite schema as an ordered list of migrations; migration `n` (1-based) brings `PRAGMA user_version`
/// from `n - 1` to `n`. Append new steps; never edit a released one.
/// A new step is declared once for both backends, in `StoreSQL`, as a `SchemaStep` where its vocabulary suffices, and
/// appended here as `step.sql(in: .sqlite)`; `SchemaMigrator` runs the list.
enum Schema {
    static let migrations: [String] = [
        version1, version2, deviceCountsAndInterestCleanup, providerTokens,
        scheduledPublishes, liveActivityTokens,
        interestCounts, devicesByRegistration, unifiedPushPlatform,
        deviceInvalidations, hmsPlatform, beamsForwards, publishDayCounts, apiKeys, publishTraceContext, auditLog,
        storedInstances, channelPublishes, openJobsByInstance, answeredRanges, checksWithoutListTables,
    ]

    /// Times are integer milliseconds since 1970. `devices.id` is the internal key targets are ordered by.
    static let version1 = """
        CREATE TABLE devices (
            id INTEGER PRIMARY KEY,
            public_id TEXT NOT NULL UNIQUE,
            instance_id TEXT NOT NULL,
            platform TEXT NOT NULL CHECK (platform IN ('apns', 'fcm', 'web')),
            token TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            environment_declared INTEGER NOT NULL DEFAULT 0,
            bundle_id TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            user_id TEXT,
            created_at INTEGER NOT NULL,
            last_registered_at INTEGER NOT NULL,
            last_status INTEGER,
            last_reason TEXT,
            last_result_at INTEGER,
            invalidated_at INTEGER,
            UNIQUE (instance_id, platform, token)
        );
        CREATE INDEX devices_by_user ON devices (instance_id, user_id) WHERE user_id IS NOT NULL;
        CREATE INDEX devices_invalidated ON devices (invalidated_at) WHERE invalidated_at IS NOT NULL;

        CREATE TABLE interests (
            id INTEGER PRIMARY KEY,
            instance_id TEXT NOT NULL,
            name TEXT NOT NULL,
            UNIQUE (instance_id, name)
        );
        CREATE TABLE device_interests (
            interest_id INTEGER NOT NULL REFERENCES interests (id),
            device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            PRIMARY KEY (interest_id, device_id)
        ) WITHOUT ROWID;
        CREATE INDEX device_interests_by_device ON device_interests (device_id);

        CREATE TABLE publish_jobs (
            id INTEGER PRIMARY KEY,
            instance_id TEXT NOT NULL,
            publish_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('interests', 'users')),
            targets TEXT NOT NULL,
            payload BLOB NOT NULL,
            webhook_url TEXT,
            state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'finished', 'failed')),
            created_at INTEGER NOT NULL,
            started_at INTEGER,
            finished_at INTEGER,
            lease_owner TEXT,
            lease_expires_at INTEGER,
            cursor INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            targets_total INTEGER,
            summary TEXT,
            UNIQUE (instance_id, publish_id)
        );
        CREATE INDEX publish_jobs_open ON publish_jobs (id) WHERE state IN ('queued', 'running');
        CREATE INDEX publish_jobs_recent ON publish_jobs (instance_id, created_at);
        CREATE INDEX publish_jobs_finished ON publish_jobs (finished_at) WHERE finished_at IS NOT NULL;
        CREATE TABLE publish_counters (
            job_id INTEGER NOT NULL REFERENCES publish_jobs (id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            value INTEGER NOT NULL,
            PRIMARY KEY (job_id, name)
        ) WITHOUT ROWID;

        CREATE TABLE events (
            instance_id TEXT NOT NULL,
            publish_id TEXT NOT NULL,
            kind INTEGER NOT NULL,
            device_id TEXT NOT NULL,
            user_id TEXT,
            at INTEGER NOT NULL,
            PRIMARY KEY (instance_id, publish_id, kind, device_id)
        ) WITHOUT ROWID;
        CREATE INDEX events_by_time ON events (at);

        CREATE TABLE webhooks (
            id INTEGER PRIMARY KEY,
            url TEXT NOT NULL,
            body BLOB NOT NULL,
            headers TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'gave_up')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            finished_at INTEGER,
            last_error TEXT
        );
        CREATE INDEX webhooks_due ON webhooks (next_attempt_at) WHERE state = 'pending';
        CREATE INDEX webhooks_finished ON webhooks (finished_at) WHERE finished_at IS NOT NULL;
        """

    /// Targets answered above a publish's cursor (answers arrive out of order): a resumed publish skips them, so a
    /// crash re-sends only what had no recorded answer. Rows at or below the cursor are deleted as it advances.
    static let version2 = """
        CREATE TABLE publish_answered (
            job_id INTEGER NOT NULL REFERENCES publish_jobs (id) ON DELETE CASCADE,
            ref INTEGER NOT NULL,
            PRIMARY KEY (job_id, ref)
        ) WITHOUT ROWID;
        """

    /// Abuse bounds (step 3; kept as its own entry so merges can renumber it).
    /// - `instance_device_counts`: devices per instance, kept by triggers on every insert and delete (registration,
    ///   delete, user deletion, retention, cascades), so the per-instance device cap costs one key lookup instead of
    ///   a count over millions of rows. An upsert that updates an existing device fires no insert trigger.
    /// - Interests no device follows are deleted as their last follower goes (also through `ON DELETE CASCADE`
    ///   from `devices`), so junk interest names cannot pile up; the ones already orphaned go now.
    static let deviceCountsAndInterestCleanup = """
        CREATE TABLE instance_device_counts (
            instance_id TEXT PRIMARY KEY,
            devices INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO instance_device_counts (instance_id, devices)
            SELECT instance_id, count(*) FROM devices GROUP BY instance_id;
        CREATE TRIGGER devices_counted_on_insert AFTER INSERT ON devices BEGIN
            INSERT INTO instance_device_counts (instance_id, devices) VALUES (NEW.instance_id, 1)
                ON CONFLICT (instance_id) DO UPDATE SET devices = devices + 1;
        END;
        CREATE TRIGGER devices_counted_on_delete AFTER DELETE ON devices BEGIN
            UPDATE instance_device_counts SET devices = devices - 1 WHERE instance_id = OLD.instance_id;
        END;

        CREATE TRIGGER interests_dropped_when_unfollowed AFTER DELETE ON device_interests BEGIN
            DELETE FROM interests WHERE id = OLD.interest_id
                AND NOT EXISTS (SELECT 1 FROM device_interests WHERE interest_id = OLD.interest_id);
        END;
        DELETE FROM interests WHERE NOT EXISTS (SELECT 1 FROM device_interests WHERE interest_id = interests.id);
        """

    /// Step 4. The signed APNs provider token per (team, key), shared by restarted processes and other nodes so
    /// that only one token per key is signed per refresh period (APNs answers `TooManyProviderTokenUpdates` to a
    /// new token within 20 minutes). `issued_at` is the JWT's `iat` in UNIX seconds; `updated_at` milliseconds.
    static let providerTokens = """
        CREATE TABLE apns_provider_tokens (
            team_id TEXT NOT NULL,
            key_id TEXT NOT NULL,
            jwt TEXT NOT NULL,
            issued_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (team_id, key_id)
        ) WITHOUT ROWID;
        """

    /// Step 5. Scheduled, cancelled and expired publishes, and device time zones (local-time publishes).
    /// - `not_before`: a queued job is not claimable before it (ms); `publish_jobs_scheduled` finds the next one.
    /// - `ended_as`: `cancelled` or `expired` for a job whose `state` is `finished`: SQLite cannot change the
    ///   `state` CHECK without rebuilding `publish_jobs`, whose dependants cascade on delete; the store reads
    ///   `ended_as` over `state`.
    /// - `cancel_requested`: cancelled while running; the worker holding it (or the next claimant) ends it.
    /// - `devices.time_zone`: an IANA zone name, NULL for the instance default.
    static let scheduledPublishes = """
        ALTER TABLE publish_jobs ADD COLUMN not_before INTEGER;
        ALTER TABLE publish_jobs ADD COLUMN ended_as TEXT CHECK (ended_as IN ('cancelled', 'expired'));
        ALTER TABLE publish_jobs ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX publish_jobs_scheduled ON publish_jobs (not_before) WHERE state = 'queued' AND not_before IS NOT NULL;
        ALTER TABLE devices ADD COLUMN time_zone TEXT;
        """

    /// Step 6. Live Activity tokens (docs/API.md "Live Activities"): per device one start token per attributes
    /// type (`activity_id` NULL) and one update token per activity; deleted with their device. `instance_id` is
    /// copied from the device so a publish's rows are found by (instance, attributes type, kind) in `id` order.
    /// `expires_at` (ms) is NULL for start tokens, which have no documented lifetime.
    static let liveActivityTokens = """
        CREATE TABLE live_activity_tokens (
            id INTEGER PRIMARY KEY,
            device_id INTEGER NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            instance_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('start', 'update')),
            attributes_type TEXT NOT NULL,
            activity_id TEXT,
            token TEXT NOT NULL,
            reference TEXT,
            expires_at INTEGER,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            CHECK ((kind = 'start') = (activity_id IS NULL))
        );
        CREATE UNIQUE INDEX live_activity_start_tokens ON live_activity_tokens (device_id, attributes_type)
            WHERE kind = 'start';
        CREATE UNIQUE INDEX live_activity_update_tokens ON live_activity_tokens (device_id, activity_id)
            WHERE kind = 'update';
        CREATE INDEX live_activity_targets ON live_activity_tokens (instance_id, attributes_type, kind, id);
        CREATE INDEX live_activity_expiry ON live_activity_tokens (expires_at) WHERE expires_at IS NOT NULL;
        """

    /// Step 7. Subscriptions ((device, interest) pairs) and distinct interest names per instance, kept by triggers
    /// like `instance_device_counts`, so the per-instance caps (`InterestLimits`) cost one key lookup. A follower
    /// row is uncounted BEFORE its delete, while its interest still exists (the cleanup trigger deletes an
    /// unfollowed interest AFTER it); cascades from `devices` fire the same triggers.
    static let interestCounts = """
        CREATE TABLE instance_interest_counts (
            instance_id TEXT PRIMARY KEY,
            subscriptions INTEGER NOT NULL,
            interests INTEGER NOT NULL
        ) WITHOUT ROWID;
        INSERT INTO instance_interest_counts (instance_id, subscriptions, interests)
            SELECT i.instance_id, count(di.device_id), count(DISTINCT i.id)
            FROM interests i LEFT JOIN device_interests di ON di.interest_id = i.id GROUP BY i.instance_id;
        CREATE TRIGGER interests_counted_on_insert AFTER INSERT ON interests BEGIN
            INSERT INTO instance_interest_counts (instance_id, subscriptions, interests) VALUES (NEW.instance_id, 0, 1)
                ON CONFLICT (instance_id) DO UPDATE SET interests = interests + 1;
        END;
        CREATE TRIGGER interests_counted_on_delete AFTER DELETE ON interests BEGIN
            UPDATE instance_interest_counts SET interests = interests - 1 WHERE instance_id = OLD.instance_id;
        END;
        CREATE TRIGGER subscriptions_counted_on_insert AFTER INSERT ON device_interests BEGIN
            UPDATE instance_interest_counts SET subscriptions = subscriptions + 1
                WHERE instance_id = (SELECT instance_id FROM interests WHERE id = NEW.interest_id);
        END;
        CREATE TRIGGER subscriptions_counted_on_delete BEFORE DELETE ON device_interests BEGIN
            UPDATE instance_interest_counts SET subscriptions = subscriptions - 1
                WHERE instance_id = (SELECT instance_id FROM interests WHERE id = OLD.interest_id);
        END;
        """

    /// Step 8. The janitor's expiry of devices nobody delivered to reads a slice of the oldest registrations.
    static let devicesByRegistration = """
        CREATE INDEX devices_by_registration ON devices (last_registered_at);
        """

    /// Step 9. `devices.platform` takes `unifiedpush`. SQLite cannot alter a CHECK, and rebuilding `devices` would
    /// rebuild every table and trigger that refers to it; widening the CHECK in the stored schema text is the
    /// procedure SQLite documents for changing constraints that existing rows already satisfy ("Making Other Kinds Of
    /// Table Schema Changes", https://www.sqlite.org/lang_altertable.html). `RESET` reloads this connection's schema;
    /// the table created and dropped after it bumps the schema cookie, so every other connection reloads it too.
    static let unifiedPushPlatform = """
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (platform IN (''apns'', ''fcm'', ''web''))',
            'CHECK (platform IN (''apns'', ''fcm'', ''web'', ''unifiedpush''))')
            WHERE type = 'table' AND name = 'devices';
        PRAGMA writable_schema = RESET;
        CREATE TABLE schema_cookie_bump (x INTEGER);
        DROP TABLE schema_cookie_bump;
        """

    /// Step 10. The invalidation log (`DeviceInvalidation`): written with the invalidation, read by the feed in
    /// (instance, id) order; `notified` = 0 rows wait for the webhook notifier. AUTOINCREMENT: an id is never
    /// reused after a purge, so a customer's cursor never skips a later row. Tokens are stored masked only.
    static let deviceInvalidations = """
        CREATE TABLE device_invalidations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            instance_id TEXT NOT NULL,
            device_id TEXT NOT NULL,
            platform TEXT NOT NULL,
            token_mask TEXT NOT NULL,
            user_id TEXT,
            reason TEXT NOT NULL,
            status INTEGER NOT NULL,
            provider_at INTEGER,
            at INTEGER NOT NULL,
            notified INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX device_invalidations_feed ON device_invalidations (instance_id, id);
        CREATE INDEX device_invalidations_at ON device_invalidations (at);
        CREATE INDEX device_invalidations_unnotified ON device_invalidations (id) WHERE notified = 0;
        """

    /// Step 11. `devices.platform` takes `hms`, the same stored-schema widening as step 9.
    static let hmsPlatform = """
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (platform IN (''apns'', ''fcm'', ''web'', ''unifiedpush''))',
            'CHECK (platform IN (''apns'', ''fcm'', ''web'', ''unifiedpush'', ''hms''))')
            WHERE type = 'table' AND name = 'devices';
        PRAGMA writable_schema = RESET;
        CREATE TABLE schema_cookie_bump (x INTEGER);
        DROP TABLE schema_cookie_bump;
        """

    /// Step 12. The Beams bridge's outbox (`BeamsForwardQueue`, docs/MIGRATING.md): publishes to replay to Beams
    /// and Beams devices to retire, claimed with a lease like `webhooks`. One row per (instance, kind, key): a
    /// publish is forwarded once, a Beams device retired once however often it registers here. The publish status
    /// reads a publish's row by that key.
    static let beamsForwards = """
        CREATE TABLE beams_forwards (
            id INTEGER PRIMARY KEY,
            instance_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('publish_interests', 'publish_users', 'retire_device')),
            key TEXT NOT NULL,
            body BLOB NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            finished_at INTEGER,
            upstream_id TEXT,
            last_error TEXT,
            UNIQUE (instance_id, kind, key)
        );
        CREATE INDEX beams_forwards_due ON beams_forwards (next_attempt_at) WHERE state = 'pending';
        CREATE INDEX beams_forwards_finished ON beams_forwards (finished_at) WHERE finished_at IS NOT NULL;
        """

    /// Step 13. Publishes per instance per UTC day (`UTCDay.number`), counted in the publish's transaction while
    /// the instance has a `quotas.publishesPerDay`, and read by the quota metrics. Days before yesterday are deleted
    /// as a new one is counted, so the table holds at most two rows per instance.
    static let publishDayCounts = """
        CREATE TABLE publish_day_counts (
            instance_id TEXT NOT NULL,
            day INTEGER NOT NULL,
            publishes INTEGER NOT NULL,
            PRIMARY KEY (instance_id, day)
        );
        """

    /// Step 14. Each instance's keys (`APIKeyStore`, docs/OPERATIONS.md "Many apps: keys and rotation"): scoped keys
    /// stored as a SHA-256 digest, rolled Beams secrets sealed with the key-encryption key. Scopes are
    /// space-separated names. Self-contained, so a branch adding another step can take either number.
    static let apiKeys = """
        CREATE TABLE api_keys (
            instance_id TEXT NOT NULL,
            key_id TEXT NOT NULL,
            kind TEXT NOT NULL CHECK (kind IN ('scoped', 'beams')),
            label TEXT NOT NULL,
            scopes TEXT NOT NULL,
            secret_digest TEXT,
            sealed_secret TEXT,
            not_before INTEGER,
            expires_at INTEGER,
            created_at INTEGER NOT NULL,
            last_used_at INTEGER,
            revoked_at INTEGER,
            rotated_from TEXT,
            PRIMARY KEY (instance_id, key_id)
        );
        """

    /// Step 15. The trace context a publish was accepted in (W3C `traceparent` and `tracestate`), so the node
    /// that claims the job, or one of its shards, continues the same trace (docs/OPERATIONS.md, "Traces").
    static let publishTraceContext = """
        ALTER TABLE publish_jobs ADD COLUMN trace_parent TEXT;
        ALTER TABLE publish_jobs ADD COLUMN trace_state TEXT;
        """

    /// Step 16. The instances' audit log (`AuditLog`, docs/OPERATIONS.md "Many apps: audit log"), appended in the
    /// transaction of the change it records. A trigger refuses UPDATE; only the retention prune deletes.
    /// Self-contained.
    static let auditLog = """
        CREATE TABLE audit_log (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            at INTEGER NOT NULL,
            instance_id TEXT NOT NULL,
            actor TEXT NOT NULL,
            source TEXT NOT NULL,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            outcome TEXT NOT NULL,
            request_id TEXT NOT NULL
        );
        CREATE INDEX audit_log_instance ON audit_log (instance_id, seq);
        CREATE INDEX audit_log_at ON audit_log (at);
        CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
            BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
        """

    /// Step 17. Instances created at run time (`InstanceDefinitionStore`, docs/OPERATIONS.md "Many apps: run-time
    /// instances"): the definition sealed with the key-encryption key; a deleted one stays as a tombstone
    /// (`deleted_at`, empty definition) so the set's version, the largest `version`, never goes back.
    /// Self-contained, so a branch adding another step can take either number.
    static let storedInstances = """
        CREATE TABLE stored_instances (
            id TEXT PRIMARY KEY,
            definition TEXT NOT NULL,
            version INTEGER NOT NULL,
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            deleted_at INTEGER
        );
        """

    /// Step 18. Broadcast (channel) publishes are a job kind of their own, `channels`, instead of an `interests`
    /// job without interests that only its publish id told apart: the `kind` CHECK is widened in the stored schema
    /// text (as step 9 widens `devices.platform`) and the broadcasts stored before are relabelled, once, by the id
    /// prefix their API gave them. Self-contained, so a branch adding another step can take either number.
    static let channelPublishes = """
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET sql = replace(sql, 'CHECK (kind IN (''interests'', ''users''))',
            'CHECK (kind IN (''interests'', ''users'', ''channels''))')
            WHERE type = 'table' AND name = 'publish_jobs';
        PRAGMA writable_schema = RESET;
        CREATE TABLE schema_cookie_bump (x INTEGER);
        DROP TABLE schema_cookie_bump;
        UPDATE publish_jobs SET kind = 'channels' WHERE kind = 'interests' AND publish_id LIKE 'pubid-channels-%';
        """

    /// Step 19. The open jobs by instance, for a claim that prefers the instance with the fewest runs on the node
    /// (`claimQuery`): it reads each instance's oldest claimable job here instead of sorting every open job by its
    /// instance's runs, which behind the intake bench's 33,000 queued publishes took 13-23 ms per claim (0.04 ms
    /// now), all of it on the one writer (docs/BENCHMARKS.md "Publish intake"). PostgreSQL's step 18 is the same
    /// index.
    static let openJobsByInstance = """
        CREATE INDEX publish_jobs_open_by_instance ON publish_jobs (instance_id, id) WHERE state IN ('queued', 'running');
        """

    /// Step 20. Answered refs as closed ranges: `publish_answered.last_ref`, a row meaning refs `ref ...
    /// coalesce(last_ref, ref)` (`StoreSQL/AnsweredRanges.swift`), so a checkpoint writes a row per run of consecutive
    /// answered refs instead of one per ref. Rows written before it keep meaning one ref each: a database upgraded
    /// with publishes in flight resumes them with the same refs skipped. PostgreSQL's step 19 is the same column.
    static let answeredRanges = AnsweredRanges.schemaStep.sql(in: .sqlite)

    /// Step 21. The CHECKs on a value list of three or more (`state IN ('queued', 'running', 'finished',
    /// 'failed')`) spelt as comparisons joined by OR, the same constraint. SQLite codes such an `IN` as a temporary
    /// table it builds and fills each time a statement checks the constraint: every job's INSERT (kind and state),
    /// claim and finish (state), every device's INSERT (platform), ~30,000 instructions each, more than the rest of a
    /// claim's UPDATE (docs/BENCHMARKS.md "Intake's store calls per job"). Lists of two were already compared inline.
    /// The stored schema text changes as in step 9; every row already satisfies the new text, which says the same.
    static let checksWithoutListTables = """
        PRAGMA writable_schema = ON;
        UPDATE sqlite_schema SET sql = replace(replace(sql,
            'CHECK (kind IN (''interests'', ''users'', ''channels''))',
            'CHECK (kind = ''interests'' OR kind = ''users'' OR kind = ''channels'')'),
            'CHECK (state IN (''queued'', ''running'', ''finished'', ''failed''))',
            'CHECK (state = ''queued'' OR state = ''running'' OR state = ''finished'' OR state = ''failed'')')
            WHERE type = 'table' AND name = 'publish_jobs';
        UPDATE sqlite_schema SET sql = replace(sql,
            'CHECK (platform IN (''apns'', ''fcm'', ''web'', ''unifiedpush'', ''hms''))',
            'CHECK (platform = ''apns'' OR platform = ''fcm'' OR platform = ''web'' OR platform = ''unifiedpush'' \
        OR platform = ''hms'')')
            WHERE type = 'table' AND name = 'devices';
        UPDATE sqlite_schema SET sql = replace(sql,
            'CHECK (state IN (''pending'', ''delivered'', ''gave_up''))',
            'CHECK (state = ''pending'' OR state = ''delivered'' OR state = ''gave_up'')')
            WHERE type = 'table' AND name = 'webhooks';
        UPDATE sqlite_schema SET sql = replace(replace(sql,
            'CHECK (kind IN (''publish_interests'', ''publish_users'', ''retire_device''))',
            'CHECK (kind = ''publish_interests'' OR kind = ''publish_users'' OR kind = ''retire_device'')'),
            'CHECK (state IN (''pending'', ''delivered'', ''failed''))',
            'CHECK (state = ''pending'' OR state = ''delivered'' OR state = ''failed'')')
            WHERE type = 'table' AND name = 'beams_forwards';
        PRAGMA writable_schema = RESET;
        CREATE TABLE schema_cookie_bump (x INTEGER);
        DROP TABLE schema_cookie_bump;
        """
}
