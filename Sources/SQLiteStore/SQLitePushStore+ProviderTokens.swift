import Foundation
import PushStore
import StoreSQL

extension SQLitePushStore {

    package func swapProviderToken(
        teamID: String, keyID: String, expectedJWT: String?, new: ProviderTokenRecord
    ) async throws -> ProviderTokenRecord {
        let now = clock()
        // Read and write in the writer's transaction: the one writer serialises every swap of this file, so the
        // comparison and the update cannot interleave with another process's (SQLite's write lock) or thread's.
        return try await write { connection in
            let stored = try ProviderTokenSQL.stored(teamID: teamID, keyID: keyID, on: connection)
            // Lost: another process or node stored a different token since the caller read `expectedJWT`.
            if let stored, stored.jwt != expectedJWT { return stored }
            try connection.run(
                """
                INSERT INTO apns_provider_tokens (team_id, key_id, jwt, issued_at, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (team_id, key_id) DO UPDATE SET
                    jwt = excluded.jwt, issued_at = excluded.issued_at, updated_at = excluded.updated_at
                """, [.text(teamID), .text(keyID), .text(new.jwt), .integer(new.issuedAt), .millis(now)])
            return new
        }
    }
}
