/// A signed APNs provider token shared through the store by every process and node using one (team, key): APNs
/// refuses a new token for the same key within 20 minutes, so a restarted process reuses the stored one.
///
/// The JWT is a bearer credential for up to an hour; the store file is already as sensitive (it holds every
/// device token), and nothing logs it.
package struct ProviderTokenRecord: Sendable, Hashable {
    /// The compact JWT (no `bearer ` prefix).
    package var jwt: String
    /// Its `iat`, UNIX seconds.
    package var issuedAt: Int64

    package init(jwt: String, issuedAt: Int64) {
        self.jwt = jwt
        self.issuedAt = issuedAt
    }
}
