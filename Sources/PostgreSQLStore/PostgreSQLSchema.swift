import SQL
import StoreSQL

/// The PostgreSQL schema as an ordered list of migrations; migration `n` (1-based) is recorded as version `n` in
/// `schema_migrations`. Append new steps; never edit a released one. Versions count separately from SQLite's.
/// A new step is declared once for both backends, in `StoreSQL`, as a `SchemaStep` where its vocabulary suffices, and
/// appended here as `step.sql(in: .postgresql)`; `SchemaMigrator` runs the list.
///
/// Times are bigint milliseconds since 1970, as on SQLite, so both backends store and compare the same values
/// (saturated at `Int64`'s range). `devices.id` is the internal key targets are ordered by and the page cursor.
///
/// Hot tables (the queue, its counters and answered refs, the webhook outbox) leave room on each page
/// (`fillfactor`) and index no column that a lease renewal or checkpoint changes, so those updates stay HOT (no
/// index writes, pruned within the page); their autovacuum starts after a fixed number of dead rows instead of a
/// fraction of the table, because a queue that is small most of the time must not wait for 20 % of itself.
enum PostgreSQLSchema {
    static let migrations: [String] = [
        version1, scheduledPublishes, liveActivityTokens, publishShards, interestCounts,
        devicesByRegistration, unifiedPushPlatform, deviceInvalidations, hmsPlatform,
        beamsForwards, publishDayCounts, apiKeys, publishTraceContext, statementCounts,
        auditLog, storedInstances, channelPublishes, openJobsByInstance, answeredRanges,
    ]

    static let version1 = """
        CREATE TABLE devices (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            public_id text NOT NULL UNIQUE,
            instance_id text NOT NULL,
            platform text NOT NULL CHECK (platform IN ('apns', 'fcm', 'web')),
            token text NOT NULL,
            environment text NOT NULL CHECK (environment IN ('sandbox', 'production')),
            environment_declared boolean NOT NULL DEFAULT false,
            bundle_id text,
            metadata text NOT NULL DEFAULT '{}',
            user_id text,
            created_at bigint NOT NULL,
            last_registered_at bigint NOT NULL,
            last_status integer,
            last_reason text,
            last_result_at bigint,
            invalidated_at bigint,
            UNIQUE (instance_id, platform, token)
        ) WITH (fillfactor = 90);
        CREATE INDEX devices_by_user ON devices (instance_id, user_id, id) WHERE user_id IS NOT NULL;
        CREATE INDEX devices_invalidated ON devices (invalidated_at) WHERE invalidated_at IS NOT NULL;

        CREATE TABLE interests (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            instance_id text NOT NULL,
            name text NOT NULL,
            UNIQUE (instance_id, name)
        );
        -- The streaming index: (interest_id, device_id) answers a keyset page as an index-only scan.
        CREATE TABLE device_interests (
            interest_id bigint NOT NULL REFERENCES interests (id),
            device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            PRIMARY KEY (interest_id, device_id)
        );
        CREATE INDEX device_interests_by_device ON device_interests (device_id);

        -- Devices per instance, kept by triggers, so the per-instance cap costs one key lookup.
        CREATE TABLE instance_device_counts (
            instance_id text PRIMARY KEY,
            devices bigint NOT NULL
        );
        CREATE FUNCTION devices_counted_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO instance_device_counts (instance_id, devices) VALUES (NEW.instance_id, 1)
                ON CONFLICT (instance_id) DO UPDATE SET devices = instance_device_counts.devices + 1;
            RETURN NULL;
        END $$;
        CREATE TRIGGER devices_counted_on_insert AFTER INSERT ON devices
            FOR EACH ROW EXECUTE FUNCTION devices_counted_on_insert();
        CREATE FUNCTION devices_counted_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE instance_device_counts SET devices = devices - 1 WHERE instance_id = OLD.instance_id;
            RETURN NULL;
        END $$;
        CREATE TRIGGER devices_counted_on_delete AFTER DELETE ON devices
            FOR EACH ROW EXECUTE FUNCTION devices_counted_on_delete();
        -- Interests no device follows are deleted with their last follower, so junk names cannot pile up.
        CREATE FUNCTION interests_dropped_when_unfollowed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM interests WHERE id = OLD.interest_id
                AND NOT EXISTS (SELECT 1 FROM device_interests WHERE interest_id = OLD.interest_id);
            RETURN NULL;
        END $$;
        CREATE TRIGGER interests_dropped_when_unfollowed AFTER DELETE ON device_interests
            FOR EACH ROW EXECUTE FUNCTION interests_dropped_when_unfollowed();

        -- The publish queue. A later migration splits a job into shards (ranges of device ids) with their own
        -- leases and cursors (docs/ARCHITECTURE.md); the job row stays the unit of intake and status.
        CREATE TABLE publish_jobs (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            instance_id text NOT NULL,
            publish_id text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('interests', 'users')),
            targets text[] NOT NULL,
            payload bytea NOT NULL,
            webhook_url text,
            state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'finished', 'failed')),
            created_at bigint NOT NULL,
            started_at bigint,
            finished_at bigint,
            lease_owner text,
            lease_expires_at bigint,
            cursor bigint NOT NULL DEFAULT 0,
            attempts integer NOT NULL DEFAULT 0,
            targets_total bigint,
            summary text,
            UNIQUE (instance_id, publish_id)
        ) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
        CREATE INDEX publish_jobs_open ON publish_jobs (id) WHERE state IN ('queued', 'running');
        CREATE INDEX publish_jobs_recent ON publish_jobs (instance_id, created_at);
        CREATE INDEX publish_jobs_finished ON publish_jobs (finished_at) WHERE finished_at IS NOT NULL;
        CREATE TABLE publish_counters (
            job_id bigint NOT NULL REFERENCES publish_jobs (id) ON DELETE CASCADE,
            name text NOT NULL,
            value bigint NOT NULL,
            PRIMARY KEY (job_id, name)
        ) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
        -- Targets answered above a job's cursor (answers arrive out of order); deleted as the cursor passes them.
        CREATE TABLE publish_answered (
            job_id bigint NOT NULL REFERENCES publish_jobs (id) ON DELETE CASCADE,
            ref bigint NOT NULL,
            PRIMARY KEY (job_id, ref)
        ) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);

        CREATE TABLE events (
            instance_id text NOT NULL,
            publish_id text NOT NULL,
            kind smallint NOT NULL,
            device_id text NOT NULL,
            user_id text,
            at bigint NOT NULL,
            PRIMARY KEY (instance_id, publish_id, kind, device_id)
        );
        CREATE INDEX events_by_time ON events (at);

        CREATE TABLE webhooks (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            url text NOT NULL,
            body bytea NOT NULL,
            headers text NOT NULL,
            state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'gave_up')),
            attempts integer NOT NULL DEFAULT 0,
            next_attempt_at bigint NOT NULL,
            created_at bigint NOT NULL,
            finished_at bigint,
            last_error text
        ) WITH (fillfactor = 70, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
        CREATE INDEX webhooks_due ON webhooks (next_attempt_at, id) WHERE state = 'pending';
        CREATE INDEX webhooks_finished ON webhooks (finished_at) WHERE finished_at IS NOT NULL;

        -- The signed APNs provider token per (team, key), shared by every node: one signature per key and period.
        CREATE TABLE apns_provider_tokens (
            team_id text NOT NULL,
            key_id text NOT NULL,
            jwt text NOT NULL,
            issued_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            PRIMARY KEY (team_id, key_id)
        );
        """

    /// Step 2. Scheduled, cancelled and expired publishes, and device time zones (local-time publishes).
    /// - `state` takes `cancelled` and `expired` itself (SQLite, which cannot alter a CHECK in place, keeps them in
    ///   a side column): the check constraint is replaced, which scans `publish_jobs` once under the migration's lock.
    /// - `not_before`: a queued job is not claimable before it (ms). `publish_jobs_scheduled` holds only queued
    ///   jobs that have one, so `nextPublishDue` reads one index entry; a claim still walks `publish_jobs_open`.
    ///   Neither a lease renewal nor a checkpoint writes it, so those updates stay HOT.
    /// - `cancel_requested`: cancelled while running; the worker holding it (or the next claimant) ends it.
    /// - `devices.time_zone`: an IANA zone name, NULL for the instance default.
    /// Columns added without a volatile default change only the catalog (no table rewrite).
    static let scheduledPublishes = """
        ALTER TABLE publish_jobs
            ADD COLUMN not_before bigint,
            ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false,
            DROP CONSTRAINT publish_jobs_state_check,
            ADD CONSTRAINT publish_jobs_state_check
                CHECK (state IN ('queued', 'running', 'finished', 'failed', 'cancelled', 'expired'));
        CREATE INDEX publish_jobs_scheduled ON publish_jobs (not_before) WHERE state = 'queued' AND not_before IS NOT NULL;
        ALTER TABLE devices ADD COLUMN time_zone text;
        """

    /// Step 3. Live Activity tokens (docs/API.md "Live Activities"), as SQLite's step 6: per device one start token
    /// per attributes type (`activity_id` NULL) and one update token per activity, deleted with their device.
    /// `instance_id` is copied from the device so a publish's rows are read by (instance, type, kind) in `id` order.
    static let liveActivityTokens = """
        CREATE TABLE live_activity_tokens (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            device_id bigint NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
            instance_id text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('start', 'update')),
            attributes_type text NOT NULL,
            activity_id text,
            token text NOT NULL,
            reference text,
            expires_at bigint,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            CHECK ((kind = 'start') = (activity_id IS NULL))
        );
        CREATE UNIQUE INDEX live_activity_start_tokens ON live_activity_tokens (device_id, attributes_type)
            WHERE kind = 'start';
        CREATE UNIQUE INDEX live_activity_update_tokens ON live_activity_tokens (device_id, activity_id)
            WHERE kind = 'update';
        CREATE INDEX live_activity_targets ON live_activity_tokens (instance_id, attributes_type, kind, id);
        CREATE INDEX live_activity_expiry ON live_activity_tokens (expires_at) WHERE expires_at IS NOT NULL;
        """

    /// Step 4. Shards of a large publish, delivered by every node (docs/ARCHITECTURE.md, "PostgreSQL: several nodes,
    /// and the shard plan"), and the nodes' heartbeats.
    /// - `publish_jobs.shards`: how many shards the job was split into (NULL: delivered whole).
    /// - `publish_shards`: a half-open range `(after, through]` of device refs (`through` NULL: no upper bound),
    ///   with its own lease, fencing `epoch` (raised by every claim, checked by every write), cursor and counters.
    ///   The counters are absolute (`counter_names`/`counter_values` are set, never added to), so a checkpoint
    ///   written again after a COMMIT whose answer was lost cannot count twice. A renewal or a checkpoint changes
    ///   no indexed column (HOT); rows are deleted when their publish ends (their counters rolled into
    ///   `publish_counters`).
    /// - `nodes`: one row per node, its last heartbeat (`/metrics` shows the live ones).
    static let publishShards = """
        ALTER TABLE publish_jobs ADD COLUMN shards integer;
        CREATE TABLE publish_shards (
            job_id bigint NOT NULL REFERENCES publish_jobs (id) ON DELETE CASCADE,
            shard_no integer NOT NULL,
            after_ref bigint NOT NULL,
            through_ref bigint,
            state text NOT NULL DEFAULT 'queued'
                CHECK (state IN ('queued', 'running', 'finished', 'failed', 'cancelled', 'expired')),
            lease_owner text,
            lease_expires_at bigint,
            epoch bigint NOT NULL DEFAULT 0,
            attempts integer NOT NULL DEFAULT 0,
            cursor bigint NOT NULL,
            counter_names text[] NOT NULL DEFAULT '{}',
            counter_values bigint[] NOT NULL DEFAULT '{}',
            targets_total bigint,
            PRIMARY KEY (job_id, shard_no)
        ) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
        CREATE INDEX publish_shards_open ON publish_shards (job_id, shard_no) WHERE state IN ('queued', 'running');
        CREATE TABLE nodes (
            node_id text PRIMARY KEY,
            version text NOT NULL,
            started_at bigint NOT NULL,
            last_seen bigint NOT NULL
        ) WITH (fillfactor = 50, autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000);
        """

    /// Step 5. Subscriptions ((device, interest) pairs) and distinct interest names per instance, kept by triggers
    /// in the instance's `instance_device_counts` row, for the per-instance caps (`InterestLimits`): a capped write
    /// locks that row first, so writers on every node take turns and the caps hold across nodes. One row for every
    /// count: two hot rows locked in either order by group transactions deadlock. A follower row is uncounted
    /// BEFORE its delete, while its interest still exists (the cleanup trigger deletes an unfollowed interest
    /// AFTER it).
    static let interestCounts = """
        ALTER TABLE instance_device_counts ADD COLUMN subscriptions bigint NOT NULL DEFAULT 0,
            ADD COLUMN interests bigint NOT NULL DEFAULT 0;
        INSERT INTO instance_device_counts (instance_id, devices, subscriptions, interests)
            SELECT i.instance_id, 0, count(di.device_id), count(DISTINCT i.id)
            FROM interests i LEFT JOIN device_interests di ON di.interest_id = i.id GROUP BY i.instance_id
            ON CONFLICT (instance_id) DO UPDATE SET subscriptions = excluded.subscriptions, interests = excluded.interests;
        CREATE FUNCTION interests_counted() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                INSERT INTO instance_device_counts (instance_id, devices, interests) VALUES (NEW.instance_id, 0, 1)
                    ON CONFLICT (instance_id) DO UPDATE SET interests = instance_device_counts.interests + 1;
            ELSE
                UPDATE instance_device_counts SET interests = interests - 1 WHERE instance_id = OLD.instance_id;
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER interests_counted AFTER INSERT OR DELETE ON interests
            FOR EACH ROW EXECUTE FUNCTION interests_counted();
        CREATE FUNCTION subscriptions_counted_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE instance_device_counts SET subscriptions = subscriptions + 1
                WHERE instance_id = (SELECT instance_id FROM interests WHERE id = NEW.interest_id);
            RETURN NULL;
        END $$;
        CREATE TRIGGER subscriptions_counted_on_insert AFTER INSERT ON device_interests
            FOR EACH ROW EXECUTE FUNCTION subscriptions_counted_on_insert();
        CREATE FUNCTION subscriptions_counted_on_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE instance_device_counts SET subscriptions = subscriptions - 1
                WHERE instance_id = (SELECT instance_id FROM interests WHERE id = OLD.interest_id);
            RETURN OLD;
        END $$;
        CREATE TRIGGER subscriptions_counted_on_delete BEFORE DELETE ON device_interests
            FOR EACH ROW EXECUTE FUNCTION subscriptions_counted_on_delete();
        """

    /// Step 6. The janitor's expiry of devices nobody delivered to reads a slice of the oldest registrations.
    static let devicesByRegistration = """
        CREATE INDEX devices_by_registration ON devices (last_registered_at);
        """

    /// Step 7. `devices.platform` takes `unifiedpush`. The version-1 CHECK is unnamed, so its generated name
    /// (`devices_platform_check`) is the one dropped; `NOT VALID` skips a scan (every existing row passes anyway).
    static let unifiedPushPlatform = """
        ALTER TABLE devices DROP CONSTRAINT devices_platform_check;
        ALTER TABLE devices ADD CONSTRAINT devices_platform_check
            CHECK (platform IN ('apns', 'fcm', 'web', 'unifiedpush')) NOT VALID;
        """

    /// Step 8. The invalidation log (`DeviceInvalidation`), as SQLite's step 10: an identity id never reused, the
    /// feed's (instance, id) index, and the notifier's partial index of rows not yet handed to the outbox.
    static let deviceInvalidations = """
        CREATE TABLE device_invalidations (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            instance_id text NOT NULL,
            device_id text NOT NULL,
            platform text NOT NULL,
            token_mask text NOT NULL,
            user_id text,
            reason text NOT NULL,
            status integer NOT NULL,
            provider_at bigint,
            at bigint NOT NULL,
            notified boolean NOT NULL DEFAULT false
        );
        CREATE INDEX device_invalidations_feed ON device_invalidations (instance_id, id);
        CREATE INDEX device_invalidations_at ON device_invalidations (at);
        CREATE INDEX device_invalidations_unnotified ON device_invalidations (id) WHERE NOT notified;
        """

    /// Step 9. `devices.platform` takes `hms` (as step 7: drop the named CHECK, add the wider one `NOT VALID`).
    static let hmsPlatform = """
        ALTER TABLE devices DROP CONSTRAINT devices_platform_check;
        ALTER TABLE devices ADD CONSTRAINT devices_platform_check
            CHECK (platform IN ('apns', 'fcm', 'web', 'unifiedpush', 'hms')) NOT VALID;
        """

    /// Step 10. The Beams bridge's outbox, as SQLite's step 12.
    static let beamsForwards = """
        CREATE TABLE beams_forwards (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            instance_id text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('publish_interests', 'publish_users', 'retire_device')),
            key text NOT NULL,
            body bytea NOT NULL,
            state text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
            attempts integer NOT NULL DEFAULT 0,
            next_attempt_at bigint NOT NULL,
            created_at bigint NOT NULL,
            finished_at bigint,
            upstream_id text,
            last_error text,
            UNIQUE (instance_id, kind, key)
        );
        CREATE INDEX beams_forwards_due ON beams_forwards (next_attempt_at, id) WHERE state = 'pending';
        CREATE INDEX beams_forwards_finished ON beams_forwards (finished_at) WHERE finished_at IS NOT NULL;
        """

    /// Step 11. Publishes per instance per UTC day (`UTCDay.number`), as on SQLite (step 13 there). Nodes take
    /// turns on an instance's row of the day inside the publish's transaction, so together they never pass the
    /// quota.
    static let publishDayCounts = """
        CREATE TABLE publish_day_counts (
            instance_id text NOT NULL,
            day bigint NOT NULL,
            publishes bigint NOT NULL,
            PRIMARY KEY (instance_id, day)
        );
        """

    /// Step 12. Each instance's keys, as SQLite's step 14.
    static let apiKeys = """
        CREATE TABLE api_keys (
            instance_id text NOT NULL,
            key_id text NOT NULL,
            kind text NOT NULL CHECK (kind IN ('scoped', 'beams')),
            label text NOT NULL,
            scopes text NOT NULL,
            secret_digest text,
            sealed_secret text,
            not_before bigint,
            expires_at bigint,
            created_at bigint NOT NULL,
            last_used_at bigint,
            revoked_at bigint,
            rotated_from text,
            PRIMARY KEY (instance_id, key_id)
        );
        """

    /// Step 13. The trace context a publish was accepted in (W3C `traceparent` and `tracestate`), so the node
    /// that claims the job, or one of its shards, continues the same trace (docs/OPERATIONS.md, "Traces").
    static let publishTraceContext = """
        ALTER TABLE publish_jobs ADD COLUMN trace_parent text, ADD COLUMN trace_state text;
        """

    /// Step 14. The counts of inserted devices and subscriptions are kept once per statement instead of once per
    /// row: a statement-level trigger reads the statement's inserted rows (a transition table) and adds their
    /// number per instance to its `instance_device_counts` row in one update. Per row, a bulk import of N devices
    /// in one transaction updated the same row N times (plus once per subscription), and each update of a row
    /// this transaction already updated walks the chain of its earlier versions, so a batch cost grew with its
    /// square (docs/BENCHMARKS.md, "Device export and import"). A one-row registration still updates the row once.
    /// The triggers keep their names (copy-store switches them off by name while it loads, `CopyPlan`); deletes
    /// stay per row (the subscription's is a BEFORE trigger, which cannot see a transition table).
    static let statementCounts = """
        CREATE OR REPLACE FUNCTION devices_counted_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            INSERT INTO instance_device_counts (instance_id, devices)
                SELECT instance_id, count(*) FROM inserted_devices GROUP BY instance_id ORDER BY instance_id
                ON CONFLICT (instance_id) DO UPDATE SET devices = instance_device_counts.devices + excluded.devices;
            RETURN NULL;
        END $$;
        DROP TRIGGER devices_counted_on_insert ON devices;
        CREATE TRIGGER devices_counted_on_insert AFTER INSERT ON devices REFERENCING NEW TABLE AS inserted_devices
            FOR EACH STATEMENT EXECUTE FUNCTION devices_counted_on_insert();
        CREATE OR REPLACE FUNCTION subscriptions_counted_on_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            UPDATE instance_device_counts c SET subscriptions = c.subscriptions + n.added
                FROM (SELECT i.instance_id, count(*) AS added FROM inserted_subscriptions s
                      JOIN interests i ON i.id = s.interest_id GROUP BY i.instance_id) n
                WHERE c.instance_id = n.instance_id;
            RETURN NULL;
        END $$;
        DROP TRIGGER subscriptions_counted_on_insert ON device_interests;
        CREATE TRIGGER subscriptions_counted_on_insert AFTER INSERT ON device_interests
            REFERENCING NEW TABLE AS inserted_subscriptions
            FOR EACH STATEMENT EXECUTE FUNCTION subscriptions_counted_on_insert();
        """

    /// Step 15. The instances' audit log, as SQLite's step 16; a trigger refuses UPDATE. Self-contained.
    static let auditLog = """
        CREATE TABLE audit_log (
            seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            at bigint NOT NULL,
            instance_id text NOT NULL,
            actor text NOT NULL,
            source text NOT NULL,
            action text NOT NULL,
            target text NOT NULL,
            outcome text NOT NULL,
            request_id text NOT NULL
        );
        CREATE INDEX audit_log_instance ON audit_log (instance_id, seq);
        CREATE INDEX audit_log_at ON audit_log (at);
        CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            RAISE EXCEPTION 'audit_log is append-only';
        END $$;
        CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
            FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
        """

    /// Step 16. Instances created at run time, as SQLite's step 17. Self-contained.
    static let storedInstances = """
        CREATE TABLE stored_instances (
            id text PRIMARY KEY,
            definition text NOT NULL,
            version bigint NOT NULL,
            created_at bigint NOT NULL,
            updated_at bigint NOT NULL,
            deleted_at bigint
        );
        """

    /// Step 17. Broadcast (channel) publishes are a job kind of their own, as SQLite's step 18: the version-1
    /// `kind` CHECK (unnamed, so named `publish_jobs_kind_check`) is replaced by a wider one, and the broadcasts
    /// stored before are relabelled by the id prefix their API gave them. Self-contained.
    static let channelPublishes = """
        ALTER TABLE publish_jobs DROP CONSTRAINT publish_jobs_kind_check;
        ALTER TABLE publish_jobs ADD CONSTRAINT publish_jobs_kind_check
            CHECK (kind IN ('interests', 'users', 'channels')) NOT VALID;
        UPDATE publish_jobs SET kind = 'channels' WHERE kind = 'interests' AND publish_id LIKE 'pubid-channels-%';
        """

    /// Step 18. The open jobs by instance, as SQLite's step 19, for the claim that prefers the instance with the
    /// fewest runs on the node (`PostgreSQLPushStore.claimSQL`): it lists the instances with open jobs by skipping
    /// along this index and seeks each one's oldest claimable job here, instead of sorting every open job by its
    /// instance's runs (208 ms per claim behind 33,000 queued publishes, docs/BENCHMARKS.md). Neither column changes
    /// after the insert, and `state` is already in `publish_jobs_open`'s predicate, so the updates that stayed HOT
    /// (lease renewals, checkpoints) stay HOT. Backwards compatible (a node of the release before never reads it);
    /// the build reads the whole table once and holds writes to `publish_jobs` meanwhile. Self-contained.
    static let openJobsByInstance = """
        CREATE INDEX publish_jobs_open_by_instance ON publish_jobs (instance_id, id) WHERE state IN ('queued', 'running');
        """

    /// Step 19. Answered refs as closed ranges, as SQLite's step 20: `publish_answered.last_ref`, nullable with no
    /// default, so adding it rewrites nothing and takes its lock only for the catalog change; rows written before it
    /// keep meaning one ref each. During a rolling upgrade a node of the release before, still running beside the
    /// migrated database, reads a range as its first ref only (and deletes one the cursor stands inside): a publish it
    /// takes over from an upgraded node can send such a range's other refs again. Duplicates only, never a ref lost:
    /// nothing it writes hides a ref that was not answered.
    static let answeredRanges = AnsweredRanges.schemaStep.sql(in: .postgresql)
}
