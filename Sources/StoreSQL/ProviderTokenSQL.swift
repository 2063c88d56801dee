import PushStore
import SQL

/// The APNs provider token lookup, the same on SQLite and PostgreSQL. The swap is not shared: SQLite compares and
/// writes under its one writer, PostgreSQL swaps in one conditional upsert that concurrent nodes serialise on.
package enum ProviderTokenSQL {
    /// The stored token of `teamID`/`keyID`, or nil.
    package static func stored(
        teamID: String, keyID: String, on connection: some SQLConnection
    ) throws -> ProviderTokenRecord? {
        try connection.fetchOne(
            "SELECT jwt, issued_at FROM apns_provider_tokens WHERE team_id = \(teamID) AND key_id = \(keyID)"
        ) { row in ProviderTokenRecord(jwt: try row.decode("jwt"), issuedAt: try row.decode("issued_at")) }
    }
}
