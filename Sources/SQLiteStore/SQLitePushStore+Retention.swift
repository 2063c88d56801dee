import Foundation
import PushStore
import SQL
import StoreSQL

/// Retention on SQLite: `RetentionSQL`'s purges on the writer.
extension SQLitePushStore {
    /// The events' delete by row value: `events` has no rowid alias to name a row by.
    package static func deleteEvents(before: Date, limit: Int) -> SQLQuery {
        """
        DELETE FROM events WHERE (instance_id, publish_id, kind, device_id) IN (
            SELECT instance_id, publish_id, kind, device_id FROM events WHERE at < \(before) LIMIT \(max(0, limit)))
        """
    }
}
