#!/usr/bin/env python3
"""Writes ops/grafana/push-server.json, the Grafana dashboard for push-server's /metrics.

    python3 ops/grafana/generate.py            # rewrite the dashboard
    python3 ops/grafana/generate.py --check    # exit 1 if the committed file differs (make test checks it too)

The panels are listed here once, in reading order; the layout (gridPos on Grafana's 24-column grid) and the ids
are computed, so a panel added or moved cannot overlap another or reuse an id. Every query names only families
of Sources/Observability/MetricCatalogue.swift; Tests/sdk/test_grafana_dashboard.py checks each against a live
scrape. docs/OPERATIONS.md ("Grafana dashboard") says how to import it.

Variables: the Prometheus data source; `job` and `node` (Prometheus's own `instance` target label: one node per
scrape target); `beams_instance`, the server's per-instance label. The server names that label `instance`, which
Prometheus owns, so with the default `honor_labels: false` a scrape stores it as `exported_instance`: the dashboard
reads it under that name.
"""
import json
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent / "push-server.json"
UID = "push-server-overview"
DS = {"type": "prometheus", "uid": "${datasource}"}
# The selector every query starts from: the chosen jobs and nodes.
SEL = 'job=~"$job", instance=~"$node"'
RATE = "$__rate_interval"


def q(expr, legend="", instant=False):
    """One query of a panel."""
    return {"expr": expr, "legendFormat": legend or "__auto", "range": not instant, "instant": instant}


def ts(title, description, targets, unit="short", width=12, stack=False):
    """A time series panel."""
    custom = {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10 if stack else 0, "showPoints": "never",
              "spanNulls": False, "stacking": {"mode": "normal" if stack else "none", "group": "A"}}
    return {"type": "timeseries", "title": title, "description": description, "width": width, "height": 8,
            "targets": targets,
            "fieldConfig": {"defaults": {"unit": unit, "custom": custom}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}}}


def stat(title, description, expr, unit="short", thresholds=None, mappings=None):
    """A single-value panel (the newest value)."""
    steps = thresholds or [{"color": "green", "value": None}]
    return {"type": "stat", "title": title, "description": description, "width": 4, "height": 4,
            "targets": [q(expr)],
            "fieldConfig": {"defaults": {"unit": unit, "mappings": mappings or [],
                                         "thresholds": {"mode": "absolute", "steps": steps}},
                            "overrides": []},
            "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                        "colorMode": "value", "graphMode": "area", "justifyMode": "auto", "orientation": "auto",
                        "textMode": "auto"}}


def red_below(limit):
    return [{"color": "red", "value": None}, {"color": "green", "value": limit}]


def red_above(limit):
    return [{"color": "green", "value": None}, {"color": "red", "value": limit}]


ROWS = [
    ("Overview", [
        stat("Nodes live", "Nodes whose heartbeat the shared PostgreSQL database saw within 30 s (push_nodes_live; "
             "PostgreSQL only).", f"max(push_nodes_live{{{SEL}}})", thresholds=red_below(1)),
        stat("Store writable", "0 while any node's store cannot write (disk full, I/O error, read-only, locked).",
             f"min(push_store_writable{{{SEL}}})", thresholds=red_below(1),
             mappings=[{"type": "value", "options": {"0": {"text": "NO", "color": "red"},
                                                     "1": {"text": "yes", "color": "green"}}}]),
        stat("Publish queue", "Publishes queued (scheduled ones included) or running, all nodes.",
             f"max(push_publish_queue_depth{{{SEL}}})"),
        stat("Publishes accepted /s", "Publish requests accepted, all kinds.",
             f"sum(rate(push_publishes_total{{{SEL}}}[{RATE}]))", unit="reqps"),
        stat("Notifications sent /s", "Deliveries a push service accepted (2xx), every platform.",
             f'sum(rate(push_notifications_total{{{SEL}, status=~"2.."}}[{RATE}]))', unit="ops"),
        stat("Scrape targets up", "Prometheus's own `up` for the chosen jobs and nodes.",
             f"sum(up{{{SEL}}})", thresholds=red_below(1)),
    ]),
    ("Intake", [
        ts("Publish requests by status", "Requests to the publish API (interests, users, channels) by HTTP status.",
           [q(f'sum by (status) (rate(push_http_requests_total{{{SEL}, method="POST", '
              f'route=~"/publish_api/v1/instances/:instance/publishes.*"}}[{RATE}]))', "{{status}}")],
           unit="reqps"),
        ts("Publishes accepted by kind", "push_publishes_total: interests, users, broadcast channels.",
           [q(f"sum by (kind) (rate(push_publishes_total{{{SEL}}}[{RATE}]))", "{{kind}}")], unit="reqps",
           stack=True),
        ts("HTTP requests by status", "Every route, by status (4xx and 5xx show refused and failed requests).",
           [q(f"sum by (status) (rate(push_http_requests_total{{{SEL}}}[{RATE}]))", "{{status}}")], unit="reqps"),
        ts("Request latency p50 / p99", "push_http_request_duration_seconds by route pattern.",
           [q(f"histogram_quantile(0.99, sum by (le, route) (rate(push_http_request_duration_seconds_bucket"
              f"{{{SEL}}}[{RATE}])))", "p99 {{route}}"),
            q(f"histogram_quantile(0.5, sum by (le, route) (rate(push_http_request_duration_seconds_bucket"
              f"{{{SEL}}}[{RATE}])))", "p50 {{route}}")], unit="s"),
        ts("Device registrations", "Registrations by platform and result, and token refreshes.",
           [q(f"sum by (platform, result) (rate(push_device_registrations_total{{{SEL}}}[{RATE}]))",
              "{{platform}} {{result}}"),
            q(f"sum by (platform) (rate(push_device_token_updates_total{{{SEL}}}[{RATE}]))",
              "{{platform}} token refresh")], unit="reqps"),
        ts("Open HTTP connections", "Client connections open on each node.",
           [q(f"push_http_open_connections{{{SEL}}}", "{{instance}}")]),
    ]),
    ("Queue and publishes", [
        ts("Queue depth", "Publishes queued or running (all nodes, so the nodes agree), by node.",
           [q(f"push_publish_queue_depth{{{SEL}}}", "{{instance}}")]),
        ts("Publishes on each node", "Claimed publishes: running, waiting for a slot, parked (paced), and the slots "
           "held.",
           [q(f"sum(push_publish_jobs_running{{{SEL}}})", "running"),
            q(f"sum(push_publish_jobs_waiting{{{SEL}}})", "waiting for a slot"),
            q(f"sum(push_publish_jobs_parked{{{SEL}}})", "parked"),
            q(f"sum(push_publish_slots_busy{{{SEL}}})", "slots busy")]),
        ts("Publishes ended", "Publish jobs that ended, by final state, and shards of split publishes (PostgreSQL).",
           [q(f"sum by (state) (rate(push_publish_jobs_total{{{SEL}}}[{RATE}]))", "{{state}}"),
            q(f"sum by (state) (rate(push_publish_shards_total{{{SEL}}}[{RATE}]))", "shard {{state}}")],
           unit="ops"),
        ts("Checkpoints", "Publish checkpoints written.",
           [q(f"sum(rate(push_checkpoints_total{{{SEL}}}[{RATE}]))", "checkpoints")], unit="ops"),
    ]),
    ("Delivery per platform", [
        ts("Sent per platform", "Deliveries a push service accepted (2xx), by platform.",
           [q(f'sum by (platform) (rate(push_notifications_total{{{SEL}, status=~"2.."}}[{RATE}]))',
              "{{platform}}")], unit="ops", stack=True),
        ts("Not delivered, by reason", "Outcomes other than 2xx, by platform, status and reason (status 0: not "
           "sent, the reason says why).",
           [q(f'sum by (platform, status, reason) (rate(push_notifications_total{{{SEL}, status!~"2.."}}'
              f'[{RATE}]))', "{{platform}} {{status}} {{reason}}")], unit="ops"),
        ts("In flight per platform", "Notifications a sender accepted and has not finished, and those waiting for "
           "its in-flight window (backpressure).",
           [q(f"sum by (platform) (push_sender_requests_in_flight{{{SEL}}})", "{{platform}} in flight"),
            q(f"sum by (platform) (push_sender_waiting_for_window{{{SEL}}})", "{{platform}} waiting"),
            q(f"sum by (platform) (push_sender_transfers_in_flight{{{SEL}}})", "{{platform}} transfers")]),
        ts("Retries and new connections", "Requests re-sent (5xx, 429, timeouts) and connections opened, per "
           "second (the gauges count since start).",
           [q(f"sum by (platform) (rate(push_sender_retries{{{SEL}}}[{RATE}]))", "{{platform}} retries"),
            q(f"sum by (platform) (rate(push_sender_connections_opened{{{SEL}}}[{RATE}]))",
              "{{platform}} connections")], unit="ops"),
        ts("Broadcast channel sends", "Broadcast sends by final outcome and reason.",
           [q(f"sum by (outcome, reason) (rate(push_broadcasts_total{{{SEL}}}[{RATE}]))",
              "{{outcome}} {{reason}}")], unit="ops"),
        ts("Credentials refused", "FCM and Web Push: instances whose credentials the service refuses right now "
           "(/ready says why).",
           [q(f"sum by (platform) (push_sender_credential_problems{{{SEL}}})", "{{platform}}")]),
    ]),
    ("APNs", [
        ts("APNs connections and streams", "Open HTTP/2 connections to APNs and requests in flight.",
           [q(f"sum(push_apns_connections{{{SEL}}})", "connections"),
            q(f"sum(push_apns_streams_in_flight{{{SEL}}})", "streams in flight")]),
        ts("Provider tokens and retries", "Provider tokens minted or adopted, TooManyProviderTokenUpdates answers "
           "and requests retried, per second.",
           [q(f"sum(rate(push_apns_token_refreshes{{{SEL}}}[{RATE}]))", "minted"),
            q(f"sum(rate(push_apns_tokens_adopted{{{SEL}}}[{RATE}]))", "adopted"),
            q(f"sum(rate(push_apns_token_update_rejections{{{SEL}}}[{RATE}]))", "rejected"),
            q(f"sum(rate(push_apns_retries{{{SEL}}}[{RATE}]))", "retries")], unit="ops"),
        ts("APNs certificate expiry", "Days until each Beams instance's APNs client certificate expires "
           "(certificate authentication only).",
           [q(f'min by (exported_instance) (push_apns_certificate_expiry_seconds{{{SEL}, '
              f'exported_instance=~"$beams_instance"}}) / 86400', "{{exported_instance}}")], unit="d"),
        ts("FCM access tokens", "Seconds until each Beams instance's FCM access token expires (refreshed about 4 "
           "minutes before).",
           [q(f'min by (exported_instance) (push_fcm_access_token_expires_in_seconds{{{SEL}, '
              f'exported_instance=~"$beams_instance"}})', "{{exported_instance}}")], unit="s"),
    ]),
    ("Store, nodes and process", [
        ts("Store writable", "1 while a node's store can write.",
           [q(f"push_store_writable{{{SEL}}}", "{{instance}}")]),
        ts("Store operations refused", "Operations refused during store outages, by reason.",
           [q(f"sum by (reason) (rate(push_store_unavailable_total{{{SEL}}}[{RATE}]))", "{{reason}}")],
           unit="ops"),
        ts("Nodes live", "Nodes sharing the PostgreSQL database, as each node sees them.",
           [q(f"push_nodes_live{{{SEL}}}", "{{instance}}")]),
        ts("Versions", "The binary each node runs (push_server_build_info).",
           [q(f"count by (version, commit) (push_server_build_info{{{SEL}}})", "{{version}} {{commit}}")]),
        ts("Memory", "Resident set size, the C heap and SQLite's memory, per node.",
           [q(f"push_process_resident_bytes{{{SEL}}}", "{{instance}} resident"),
            q(f'push_process_heap_bytes{{{SEL}, state="in_use"}}', "{{instance}} heap in use"),
            q(f"push_store_sqlite_memory_bytes{{{SEL}}}", "{{instance}} SQLite")], unit="bytes"),
    ]),
    ("Rate limits and quotas", [
        ts("Requests refused with 429", "By limit: ip, instance, auth (locked out), test_push; and requests let "
           "through untracked because the address table was full.",
           [q(f"sum by (limit) (rate(push_rate_limited_total{{{SEL}}}[{RATE}]))", "{{limit}}"),
            q(f"sum(rate(push_rate_limit_untracked_total{{{SEL}}}[{RATE}]))", "untracked")], unit="reqps"),
        ts("Instance quotas reached", "New devices refused at limits.maxDevicesPerInstance; interest writes refused "
           "at the subscription or interest limits; token refreshes refused for a conflict.",
           [q(f"sum(rate(push_device_limit_refusals_total{{{SEL}}}[{RATE}]))", "devices"),
            q(f"sum by (limit) (rate(push_interest_limit_refusals_total{{{SEL}}}[{RATE}]))", "{{limit}}"),
            q(f"sum(rate(push_device_token_conflicts_total{{{SEL}}}[{RATE}]))", "token conflicts")],
           unit="reqps"),
        ts("Quota used", "Each instance's use of its quotas (instances[].quotas: devices, publishes per UTC day), "
           "as a share of the quota; every node reads the same counts from the store.",
           [q(f'max by (beams_instance, quota) (push_quota_usage{{{SEL}, beams_instance=~"$beams_instance"}}) / '
              f'max by (beams_instance, quota) (push_quota_limit{{{SEL}, beams_instance=~"$beams_instance"}})',
              "{{beams_instance}} {{quota}}")], unit="percentunit"),
        ts("Quota refusals", "Registrations (400) and publishes (429) refused by an instance's quota.",
           [q(f'sum by (beams_instance, quota) (rate(push_quota_refusals_total{{{SEL}, '
              f'beams_instance=~"$beams_instance"}}[{RATE}]))', "{{beams_instance}} {{quota}}")], unit="reqps"),
        ts("Provider budgets", "Notifications per minute let through each instance's provider budget "
           "(quotas.notificationsPerMinute), against the budget; each node paces its share.",
           [q(f'sum by (beams_instance, platform) (rate(push_delivery_budget_sent_total{{{SEL}, '
              f'beams_instance=~"$beams_instance"}}[{RATE}])) * 60', "{{beams_instance}} {{platform}} sent"),
            q(f'max by (beams_instance, platform) (push_delivery_budget_per_minute{{{SEL}, '
              f'beams_instance=~"$beams_instance"}})', "{{beams_instance}} {{platform}} budget")]),
    ]),
    ("Estimates and traces", [
        ts("Publish time left", "Per instance, the longest estimated time left of the publishes (or shards) a node "
           "is sending (the status's estimatedCompletionAt; 0 when none has an estimate).",
           [q(f'max by (beams_instance) (push_publish_estimate_remaining_seconds{{{SEL}, '
              f'beams_instance=~"$beams_instance"}})', "{{beams_instance}}")], unit="s"),
        ts("Trace export", "Spans exported over OTLP, and spans dropped (queue full, export failed, rejected), "
           "exports retried and failed for good (tracing on only).",
           [q(f"sum(rate(push_otlp_spans_exported_total{{{SEL}}}[{RATE}]))", "exported"),
            q(f"sum by (reason) (rate(push_otlp_spans_dropped_total{{{SEL}}}[{RATE}]))", "dropped {{reason}}"),
            q(f"sum by (reason) (rate(push_otlp_export_retries_total{{{SEL}}}[{RATE}]))", "retried {{reason}}"),
            q(f"sum by (reason) (rate(push_otlp_export_failures_total{{{SEL}}}[{RATE}]))", "failed {{reason}}")],
           unit="ops"),
    ]),
    ("Webhooks and reports", [
        ts("Webhook attempts", "By outcome (delivered, retry, gave_up, deferred).",
           [q(f"sum by (outcome) (rate(push_webhooks_total{{{SEL}}}[{RATE}]))", "{{outcome}}")], unit="ops"),
        ts("Webhook failures", "Failed attempts by reason (timeout, http_status, circuit_open, …).",
           [q(f"sum by (reason) (rate(push_webhook_failures_total{{{SEL}}}[{RATE}]))", "{{reason}}")],
           unit="ops"),
        ts("Reported events", "Delivery and open reports recorded, and those accepted but ignored.",
           [q(f"sum by (event) (rate(push_reported_events_total{{{SEL}}}[{RATE}]))", "{{event}}"),
            q(f"sum by (reason) (rate(push_reported_events_ignored_total{{{SEL}}}[{RATE}]))",
              "ignored {{reason}}")], unit="ops"),
    ]),
]


def variable(name, label, query, regex=""):
    """A Prometheus query variable: multi-select, `All` matching every value. The query in its string form, which every
    Grafana reads (newer ones save an object, which Grafana's published dashboard schema does not admit)."""
    return {"type": "query", "name": name, "label": label, "datasource": DS,
            "query": query, "definition": query, "regex": regex,
            "refresh": 2, "sort": 1, "multi": True, "includeAll": True, "allValue": ".*",
            "current": {"selected": True, "text": ["All"], "value": ["$__all"]}, "hide": 0, "options": []}


def dashboard():
    panels, y, next_id = [], 0, 1
    for title, members in ROWS:
        panels.append({"type": "row", "title": title, "id": next_id, "collapsed": False, "panels": [],
                       "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}})
        next_id, y = next_id + 1, y + 1
        x, row_height = 0, 0
        for member in members:
            panel = dict(member)
            w, h = panel.pop("width"), panel.pop("height")
            if x + w > 24:
                x, y, row_height = 0, y + row_height, 0
            for index, target in enumerate(panel["targets"]):
                target["refId"] = chr(ord("A") + index)
                target["datasource"] = DS
            panels.append({"id": next_id, "gridPos": {"x": x, "y": y, "w": w, "h": h}, "datasource": DS, **panel})
            next_id, x, row_height = next_id + 1, x + w, max(row_height, h)
        y += row_height
    return {
        "uid": UID,
        "title": "push-server",
        "description": "push-server's /metrics: intake, queue, delivery per platform, APNs, store, nodes, limits "
                       "(ops/grafana/push-server.json in the repository).",
        "tags": ["push-server", "push-notifications"],
        "editable": True,
        "graphTooltip": 1,
        "timezone": "browser",
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "fiscalYearStartMonth": 0,
        "liveNow": False,
        "weekStart": "",
        "links": [],
        "annotations": {"list": [{
            "builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"}, "enable": True, "hide": True,
            "iconColor": "rgba(0, 211, 255, 1)", "name": "Annotations & Alerts", "type": "dashboard"}]},
        "templating": {"list": [
            {"type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus",
             "regex": "", "hide": 0, "multi": False, "includeAll": False,
             "current": {"selected": False, "text": "default", "value": "default"}, "options": []},
            variable("job", "Job", "label_values(push_server_build_info, job)"),
            variable("node", "Node", 'label_values(push_server_build_info{job=~"$job"}, instance)'),
            variable("beams_instance", "Beams instance",
                     'label_values({__name__=~"push_apns_certificate_expiry_seconds|'
                     'push_fcm_access_token_expires_in_seconds", job=~"$job"}, exported_instance)'),
        ]},
        "panels": panels,
    }


def render():
    return json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    text = render()
    if sys.argv[1:] == ["--check"]:
        if OUT.read_text() != text:
            sys.exit(f"{OUT} is not what {Path(__file__).name} writes: run python3 ops/grafana/generate.py")
    else:
        OUT.write_text(text)
