import Foundation
import PushStore

extension PostgreSQLPushStore {
    public func providerToken(teamID: String, keyID: String) async throws -> ProviderTokenRecord? {
        try await read { connection in
            let result = try connection.query(
                "SELECT jwt, issued_at FROM apns_provider_tokens WHERE team_id = $1 AND key_id = $2",
                [.text(teamID), .text(keyID)])
            return result.first { ProviderTokenRecord(jwt: result.text($0, 0), issuedAt: result.int64($0, 1)) }
        }
    }

    /// Compare-and-swap in one statement: insert when no row exists, replace only the row that still holds
    /// `expectedJWT`. Two nodes swapping at once serialise on the row (or on the key, for the first insert); the
    /// second one's condition is checked against the first one's committed token, so it loses and reads that token.
    public func swapProviderToken(
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
            let stored = try connection.query(
                "SELECT jwt, issued_at FROM apns_provider_tokens WHERE team_id = $1 AND key_id = $2",
                [.text(teamID), .text(keyID)])
            guard let winner = stored.first({ ProviderTokenRecord(jwt: stored.text($0, 0), issuedAt: stored.int64($0, 1)) })
            else { throw PostgreSQLError(sqlstate: nil, message: "provider token row vanished during a swap") }
            return winner
        }
    }
}
