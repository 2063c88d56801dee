import Foundation
import PushStore
import StoreSQL

extension PostgreSQLPushStore {

    /// Compare-and-swap in one statement: insert when no row exists, replace only the row that still holds
    /// `expectedJWT`. Two nodes swapping at once serialise on the row (or on the key, for the first insert); the
    /// second one's condition is checked against the first one's committed token, so it loses and reads that token.
    package func swapProviderToken(
        teamID: String, keyID: String, expectedJWT: String?, new: ProviderTokenRecord
    ) async throws -> ProviderTokenRecord {
        let now = clock()
        return try await write { connection in
            let swapped = try connection.query(
                """
                INSERT INTO apns_provider_tokens AS t (team_id, key_id, jwt, issued_at, updated_at)
                VALUES ($1, $2, $3, $4::bigint, $5::bigint)
                ON CONFLICT (team_id, key_id) DO UPDATE SET
                    jwt = excluded.jwt, issued_at = excluded.issued_at, updated_at = excluded.updated_at
                WHERE t.jwt = $6::text
                RETURNING jwt, issued_at
                """,
                [.text(teamID), .text(keyID), .text(new.jwt), .integer(new.issuedAt), .millis(now), .text(expectedJWT)])
            if swapped.rowCount > 0 { return new }
            // Lost: another process or node stored a different token since the caller read `expectedJWT`. A new
            // statement sees that committed token.
            guard let winner = try ProviderTokenSQL.stored(teamID: teamID, keyID: keyID, on: connection) else {
                throw PostgreSQLError(sqlstate: nil, message: "provider token row vanished during a swap")
            }
            return winner
        }
    }
}
