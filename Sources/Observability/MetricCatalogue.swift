// Every metric family the server writes to `/metrics`, one handle each: name, `# HELP` text and label names.
// A call site names a handle (`metrics.increment(.publishes, ["kind": "interests"])`), never a string, so a
// family that is not here cannot be written, and one that is here cannot be dropped for being undeclared
// (`Metrics` declares a family on its first use if no `declare` came first). The `declare` calls at start-up
// (`Application.declareMetrics`, `PublishEngine.declareMetrics`, …) fix the order of the families in the output and
// list the families that exist before their first value. docs/OPERATIONS.md ("Metrics") describes each one.

package extension CounterMetric {
    static let httpRequests = CounterMetric(
        "push_http_requests_total",
        help: "HTTP requests by route pattern, method and status.",
        labels: ["route", "method", "status"])
    static let publishes = CounterMetric("push_publishes_total", help: "Publishes accepted, by kind.", labels: ["kind"])
    static let deviceRegistrations = CounterMetric(
        "push_device_registrations_total",
        help: "Device registrations by platform and result.",
        labels: ["platform", "result"])
    static let deviceTokenUpdates = CounterMetric(
        "push_device_token_updates_total",
        help: "Device token refreshes applied, by platform.", labels: ["platform"])
    static let deviceTokenConflicts = CounterMetric(
        "push_device_token_conflicts_total",
        help: """
            Token refreshes refused because a live device bound to another user holds the token, by platform.
            """, labels: ["platform"])
    static let reportedEvents = CounterMetric(
        "push_reported_events_total", help: "Reporting API events by type.",
        labels: ["event"])
    static let rateLimited = CounterMetric(
        "push_rate_limited_total",
        help: "Requests refused with 429, by limit (ip, instance, auth).", labels: ["limit"])
    static let rateLimitUntracked = CounterMetric(
        "push_rate_limit_untracked_total",
        help: "Requests let through unlimited because the table of client addresses was full.")
    static let deviceLimitRefusals = CounterMetric(
        "push_device_limit_refusals_total",
        help: "New devices refused because the instance reached limits.maxDevicesPerInstance.")
    static let interestLimitRefusals = CounterMetric(
        "push_interest_limit_refusals_total",
        help: """
            Interest writes refused because the instance reached limits.maxSubscriptionsPerInstance \
            (limit="subscriptions") or limits.maxInterestsPerInstance (limit="interests").
            """, labels: ["limit"])
    static let reportedEventsIgnored = CounterMetric(
        "push_reported_events_ignored_total",
        help: "Reporting API events accepted but not recorded, by reason.",
        labels: ["reason"])
    static let publishJobs = CounterMetric(
        "push_publish_jobs_total", help: "Publish jobs that ended, by final state.",
        labels: ["state"])
    static let notifications = CounterMetric(
        "push_notifications_total",
        help: "Delivery outcomes by platform, status and reason.",
        labels: ["platform", "status", "reason"])
    static let broadcasts = CounterMetric(
        "push_broadcasts_total",
        help: "Broadcast channel sends by final outcome (accepted, failed) and reason.",
        labels: ["outcome", "reason"])
    static let checkpoints = CounterMetric("push_checkpoints_total", help: "Checkpoints written.")
    static let leasesLost = CounterMetric(
        "push_publish_leases_lost_total",
        help: "Publish runs this node stopped because another worker took their lease over.")
    static let publishShards = CounterMetric(
        "push_publish_shards_total",
        help: "Shards of split publishes this node ended, by state.", labels: ["state"])
    static let webhooks = CounterMetric(
        "push_webhooks_total", help: "Webhook attempts by outcome.", labels: ["outcome"])
    static let webhookFailures = CounterMetric(
        "push_webhook_failures_total", help: "Failed webhook attempts by reason.",
        labels: ["reason"])
    static let beamsBridge = CounterMetric(
        "push_beams_bridge_total",
        help: "Beams bridge attempts (publish forwards, device retirements) by outcome.",
        labels: ["kind", "outcome"])
    static let quotaRefusals = CounterMetric(
        "push_quota_refusals_total",
        help: """
            Requests refused by an instance's quota (quota="devices" or "publishes_per_day"), by configured instance.
            """, labels: ["beams_instance", "quota"])
    static let deliveryBudgetSent = CounterMetric(
        "push_delivery_budget_sent_total",
        help: """
            Notifications this node let through an instance's provider budget (quotas.notificationsPerMinute), by \
            configured instance and platform.
            """, labels: ["beams_instance", "platform"])
    static let otlpSpansExported = CounterMetric(
        "push_otlp_spans_exported_total",
        help: "Spans the trace receiver accepted (tracing on only).")
    static let otlpSpansDropped = CounterMetric(
        "push_otlp_spans_dropped_total",
        help: """
            Spans not exported, by reason: queue_full (the export queue held tracing.maxQueueSize spans), \
            export_failed (the export failed after its retries), rejected (the receiver refused them).
            """, labels: ["reason"])
    static let otlpExportFailures = CounterMetric(
        "push_otlp_export_failures_total",
        help: "Exports that failed for good, by reason (http_<status>, timeout, connection, …).",
        labels: ["reason"])
    static let otlpExportRetries = CounterMetric(
        "push_otlp_export_retries_total",
        help: "Export attempts sent again (429, 502, 503, 504, connection, timeout), by reason.",
        labels: ["reason"])
    static let storeUnavailable = CounterMetric(
        "push_store_unavailable_total",
        help: "Store operations refused because the store could not work, by reason.",
        labels: ["reason"])
}

package extension GaugeMetric {
    static let httpOpenConnections = GaugeMetric("push_http_open_connections", help: "Open HTTP connections.")
    static let processResidentBytes = GaugeMetric(
        "push_process_resident_bytes", help: "Resident set size of the process.")
    static let processHeapBytes = GaugeMetric(
        "push_process_heap_bytes",
        help: """
            The C heap: bytes in use in the arenas, in blocks mapped on their own, and kept free by malloc.
            """, labels: ["state"])
    static let apnsStreamsInFlight = GaugeMetric("push_apns_streams_in_flight", help: "APNs requests in flight.")
    static let apnsConnections = GaugeMetric("push_apns_connections", help: "Open APNs HTTP/2 connections.")
    static let apnsTokenRefreshes = GaugeMetric(
        "push_apns_token_refreshes", help: "Provider tokens minted since start.")
    static let apnsTokensAdopted = GaugeMetric(
        "push_apns_tokens_adopted",
        help: "Stored provider tokens reused since start (signed earlier or by another node).")
    static let apnsTokenUpdateRejections = GaugeMetric(
        "push_apns_token_update_rejections",
        help: "TooManyProviderTokenUpdates answers since start (retried, not final).")
    static let apnsRetries = GaugeMetric("push_apns_retries", help: "APNs requests retried since start.")
    static let apnsCertificateExpiry = GaugeMetric(
        "push_apns_certificate_expiry_seconds",
        help: """
            Seconds until the instance's APNs client certificate expires (negative once expired), by instance; only \
            instances with certificate authentication.
            """, labels: ["instance"])
    static let senderRequestsInFlight = GaugeMetric(
        "push_sender_requests_in_flight",
        help: """
            Notifications accepted by a platform's sender and not final yet (in transfer, waiting for a token or a retry), \
            by platform.
            """, labels: ["platform"])
    static let senderWaitingForWindow = GaugeMetric(
        "push_sender_waiting_for_window",
        help: """
            Deliveries waiting because the platform sender's in-flight window is full, by platform.
            """, labels: ["platform"])
    static let senderTransfersInFlight = GaugeMetric(
        "push_sender_transfers_in_flight",
        help: "HTTP requests attached to curl right now, by platform.",
        labels: ["platform"])
    static let senderConnectionsOpened = GaugeMetric(
        "push_sender_connections_opened",
        help: "TCP/TLS connections opened since start, by platform.",
        labels: ["platform"])
    static let senderRetries = GaugeMetric(
        "push_sender_retries",
        help: "Requests re-sent since start (5xx, 429, timeouts), by platform.",
        labels: ["platform"])
    static let senderCredentialProblems = GaugeMetric(
        "push_sender_credential_problems",
        help: """
            Instances whose FCM or VAPID credentials are refused right now (see /ready), by platform.
            """, labels: ["platform"])
    static let fcmAccessTokenAge = GaugeMetric(
        "push_fcm_access_token_age_seconds",
        help: """
            Seconds since the FCM access token in use was fetched, by instance (absent before the first).
            """, labels: ["instance"])
    static let fcmAccessTokenExpiresIn = GaugeMetric(
        "push_fcm_access_token_expires_in_seconds",
        help: """
            Seconds until the FCM access token in use expires, by instance (absent before the first).
            """, labels: ["instance"])
    /// The usual Prometheus build-info idiom: constant 1, the facts in labels (one series per binary).
    static let serverBuildInfo = GaugeMetric(
        "push_server_build_info", help: "Version and git commit of the running binary.",
        labels: ["version", "commit"])
    static let publishJobsRunning = GaugeMetric("push_publish_jobs_running", help: "Publish jobs this node is running.")
    static let publishQueueDepth = GaugeMetric(
        "push_publish_queue_depth",
        help: "Publishes queued (scheduled ones included) or running (all nodes).")
    static let nodesLive = GaugeMetric(
        "push_nodes_live",
        help: "Nodes whose heartbeat the shared database saw within the last 30 s.")
    static let publishSlotsBusy = GaugeMetric(
        "push_publish_slots_busy",
        help: "Publish slots (regular and express) held by a sending publish.")
    static let publishEstimateRemainingSeconds = GaugeMetric(
        "push_publish_estimate_remaining_seconds",
        help: """
            Longest estimated time left (s) of the publishes (or shards) this node is sending, by configured instance; 0 \
            when none has an estimate.
            """, labels: ["beams_instance"])
    static let publishJobsWaiting = GaugeMetric(
        "push_publish_jobs_waiting", help: "Claimed publishes waiting for a publish slot.")
    static let publishJobsParked = GaugeMetric(
        "push_publish_jobs_parked",
        help: "Claimed publishes parked without a slot (paced, between deliveries).")
    static let storeWritable = GaugeMetric(
        "push_store_writable",
        help: """
            1 while the store can write; 0 while writes fail (disk full, I/O error, read-only, locked).
            """)
    static let quotaLimit = GaugeMetric(
        "push_quota_limit",
        help: """
            An instance's quota (quota="devices" or "publishes_per_day"), by configured instance; only quotas that are set.
            """, labels: ["beams_instance", "quota"])
    static let quotaUsage = GaugeMetric(
        "push_quota_usage",
        help: """
            What an instance has used of a quota (devices registered; publishes counted today, UTC), all nodes together, \
            read from the store every few seconds.
            """, labels: ["beams_instance", "quota"])
    static let deliveryBudget = GaugeMetric(
        "push_delivery_budget_per_minute",
        help: """
            An instance's provider budget in notifications per minute (quotas.notificationsPerMinute), all nodes together.
            """, labels: ["beams_instance", "platform"])
    static let deliveryBudgetNodeShare = GaugeMetric(
        "push_delivery_budget_node_share_per_minute",
        help: """
            This node's share of an instance's provider budget: the budget divided by the live nodes.
            """, labels: ["beams_instance", "platform"])
    static let storeSQLiteMemoryBytes = GaugeMetric(
        "push_store_sqlite_memory_bytes",
        help: "Memory held by SQLite (page caches, statements, schemas), all connections.")
    static let configReloadSuccess = GaugeMetric(
        "push_config_reload_success",
        help: """
            1 when the last reload of the config file (SIGHUP) was applied, 0 when it was refused (the old config stays); \
            1 from start-up until the first reload.
            """)
    static let configReloadTimestamp = GaugeMetric(
        "push_config_reload_timestamp_seconds",
        help: """
            When the config file was last loaded (start-up or SIGHUP, applied or refused), Unix seconds.
            """)
    static let storedInstancesVersion = GaugeMetric(
        "push_instances_version",
        help: """
            The version of the stored (run-time) instance set this node serves; a node behind the others has not seen a change.
            """)
}

package extension HistogramMetric {
    static let httpRequestDuration = HistogramMetric(
        "push_http_request_duration_seconds",
        help: "HTTP request latency by route pattern.", labels: ["route"])
}
