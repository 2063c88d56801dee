import PushStore
import SQL

/// Where the two backends' publish tables differ, named once so that the queue's, status' and statistics'
/// statements can be written once over both (`PublishQueueSQL`, `StatisticsSQL`). Each backend passes its own case.
///
/// - SQLite keeps cancelled and expired jobs as `finished` with `ended_as` (its `state` CHECK cannot change without
///   rebuilding `publish_jobs`; see `Schema.scheduledPublishes`); PostgreSQL stores every state in `state`.
/// - SQLite keeps a job's targets as a JSON array text, PostgreSQL as `text[]`.
/// - PostgreSQL splits large publishes into `publish_shards`, whose counters are job counters until the job ends;
///   SQLite has no shards.
/// - SQLite is told its partial indexes by name (`INDEXED BY`) where its planner would not pick them.
package enum PublishSchema: Sendable {
    case sqlite
    case postgresql

    /// A job's state as `PublishState` spells it, read from the `publish_jobs` row named `table`.
    package func state(of table: String) -> String {
        switch self {
        case .sqlite: return "COALESCE(\(table).ended_as, \(table).state)"
        case .postgresql: return "\(table).state"
        }
    }

    /// The assignments that store `state` in a `publish_jobs` row (for SQLite, `state` and `ended_as`).
    package func setState(_ state: PublishState) -> SQLQuery {
        switch self {
        case .postgresql:
            return "state = \(state.rawValue)"
        case .sqlite:
            let ended = state == .cancelled || state == .expired ? state.rawValue : nil
            let stored = state == .cancelled || state == .expired ? PublishState.finished.rawValue : state.rawValue
            return "state = \(stored), ended_as = \(ended)"
        }
    }

    /// The `targets` column of the row named `table` as a JSON array text (`PublishQueueSQL.decodeTargets`).
    package func targets(of table: String) -> String {
        switch self {
        case .sqlite: return "\(table).targets"
        case .postgresql: return "array_to_json(\(table).targets)::text"
        }
    }

    /// The value stored in the `targets` column for `json`, a JSON array of strings.
    package func storedTargets(_ json: String) -> SQLQuery {
        switch self {
        case .sqlite: return "\(json)"
        case .postgresql:
            return "ARRAY(SELECT t FROM json_array_elements_text(\(json)::json) WITH ORDINALITY AS e(t, n) ORDER BY n)"
        }
    }

    /// The `INDEXED BY` hint for `index` on SQLite, nothing on PostgreSQL.
    package func hint(_ index: String) -> String {
        switch self {
        case .sqlite: return "INDEXED BY \(index)"
        case .postgresql: return ""
        }
    }

    /// Rows `(job_id, name, value)` of the counters of the jobs whose ids `jobs` selects; on PostgreSQL with the
    /// open shards' counters of a split job still running (rolled up into `publish_counters` when it ends), so a job
    /// may have several rows of one name: callers sum them.
    package func counterRows(jobs: SQLQuery) -> SQLQuery {
        let finished: SQLQuery = "SELECT job_id, name, value FROM publish_counters WHERE job_id IN (\(jobs))"
        switch self {
        case .sqlite:
            return finished
        case .postgresql:
            return finished
                + """
                 UNION ALL
                SELECT s.job_id, c.name, c.value
                FROM publish_shards s, unnest(s.counter_names, s.counter_values) AS c(name, value)
                WHERE s.job_id IN (\(jobs))
                """
        }
    }
}
