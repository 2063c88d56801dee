import Foundation
import PushStore
import SQL

/// The one reader of a publish target, shared by both backends' target pages. The pages themselves stay per
/// backend, as they really differ: SQLite merges per-interest cursors over `device_interests`' primary key in Swift
/// (and reads a users publish's targets with `json_each`); PostgreSQL reads one keyset page per statement over
/// `unnest` and `= ANY`, bounded by a shard's end when it runs one.
package enum TargetSQL {
    /// The target columns of the `devices` row named `table`, in the order `target(_:ref:from:)` reads them.
    package static func columns(of table: String) -> String {
        let d = table
        return """
            \(d).public_id, \(d).platform, \(d).token, \(d).environment, \(d).environment_declared, \
            \(d).last_registered_at, \(d).user_id, \(d).time_zone
            """
    }

    /// The target `ref` in a row holding `columns(of:)` from column `offset` on.
    package static func target(_ row: some SQLRow, ref: Int64, from offset: Int) throws -> Target {
        // The typed readers, not `decode`: a fan-out reads every target here (docs/BENCHMARKS.md).
        Target(
            ref: ref, deviceID: try row.text(at: offset),
            platform: Platform(rawValue: try row.text(at: offset + 1)) ?? .apns,
            token: try row.text(at: offset + 2),
            environment: PushEnvironment(rawValue: try row.text(at: offset + 3)) ?? .production,
            environmentDeclared: try row.decode(offset + 4),
            lastRegisteredAt: Date(millisecondsSince1970: try row.integer(at: offset + 5)),
            userID: try row.optionalText(at: offset + 6), timeZone: try row.optionalText(at: offset + 7))
    }
}
