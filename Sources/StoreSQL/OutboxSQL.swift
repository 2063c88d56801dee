import Foundation
import PushStore
import SQL

/// What the two outboxes (`webhooks`, `beams_forwards`) do alike: a pending row's attempt is recorded by one UPDATE
/// guarded by `state = 'pending'`, and the next due time is the minimum over the pending rows (their partial
/// indexes `webhooks_due` and `beams_forwards_due` answer it without a scan).
enum OutboxSQL {
    /// Sets `assignments` on the pending row `id` of `table` (a constant table name).
    /// - Throws: `PushStoreError.notFound` when the row is not pending (finished already, or gone).
    static func mark(_ table: String, _ id: Int64, set assignments: SQLQuery, on connection: some SQLConnection) throws
    {
        let changed = try connection.perform(
            "UPDATE \(raw: table) SET \(assignments) WHERE id = \(id) AND state = 'pending'")
        if changed == 0 { throw PushStoreError.notFound }
    }

    /// When the next pending row of `table` is due, nil when none is pending.
    static func nextDue(_ table: String, on connection: some SQLConnection) throws -> Date? {
        try connection.fetchOne("SELECT min(next_attempt_at) AS due FROM \(raw: table) WHERE state = 'pending'") {
            row in
            try row.optionalDate("due")
        } ?? nil
    }
}
