/// Failures the store reports deliberately. `StoreUnavailableError` means "not now" (a full disk, …); any other
/// error thrown by a store is a backend failure (`SQLiteError` for SQLite), which callers answer with a 500.
package enum PushStoreError: Error, Sendable, Equatable {
    /// The store was closed.
    case closed
    /// The database was written by a newer version of this program.
    case unsupportedSchemaVersion(found: Int, newestKnown: Int)
    /// `enqueuePublish` with a publish id the instance already used.
    case duplicatePublish(publishID: String)
    /// The worker no longer holds the job's lease (it expired and another worker claimed the job, or the job
    /// ended). The worker must stop working on it.
    case leaseLost(PublishJobID)
    /// No such job (or webhook).
    case notFound
    /// `registerDevice` with a new token while the instance already holds its maximum number of devices.
    case deviceLimitReached
    /// An interest write that would take the instance over `InterestLimits.maxSubscriptionsPerInstance`; nothing
    /// of it was stored.
    case subscriptionLimitReached
    /// An interest write that would take the instance over `InterestLimits.maxInterestsPerInstance` distinct
    /// names; nothing of it was stored.
    case interestLimitReached
    /// `updateToken` with a token that another live (not invalidated) device of the instance holds while bound to a
    /// user other than the updated device's: nothing changed. A refresh must not move a phone away from the user it
    /// is bound to (docs/SECURITY.md, "Push tokens").
    case tokenHeldByAnotherUser
    /// `enqueuePublish` of a job with a `dailyPublishQuota` the instance already reached on the job's UTC day:
    /// nothing was stored.
    case publishQuotaReached
}
