import Foundation
import PushStore
import SQL
import StoreSQL

/// Retention on PostgreSQL: `RetentionSQL`'s purges, rows another node is purging skipped.
extension PostgreSQLPushStore {
    /// The events' delete by `ctid`, skipping the rows another node's purge holds.
    package static func deleteEvents(before: Date, limit: Int) -> SQLQuery {
        """
        DELETE FROM events WHERE ctid = ANY(ARRAY(
            SELECT ctid FROM events WHERE at < \(before) LIMIT \(max(0, limit)) \(lock: .forUpdateSkipLocked)))
        """
    }
}
