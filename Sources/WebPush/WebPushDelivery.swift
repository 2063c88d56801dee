import HTTPClient

/// One Web Push message for one subscription.
package struct WebPushNotification: Sendable {
    package var subscription: WebPushSubscription
    package var message: WebPushMessage
    /// No retry is scheduled past this (the publish's `expiresAt`, the message's `TTL`): one that would go out
    /// later ends `.expired` at once.
    package var deadline: RetryDeadline
    /// The run the message belongs to: cancelling it ends a waiting retry at once (`.cancelled`).
    package var retries: RetryScope?

    package init(
        subscription: WebPushSubscription, message: WebPushMessage, deadline: RetryDeadline = .none,
        retries: RetryScope? = nil
    ) {
        self.subscription = subscription
        self.message = message
        self.deadline = deadline
        self.retries = retries
    }
}

/// Why a notification got no push-service answer worth classifying.
package enum WebPushFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// The endpoint's host is not on the allowlist: nothing was sent, no connection attempted.
    case hostNotAllowed(String)
    /// Open endpoints only: the host is new and `WebPushOpenEndpoints.maxHosts` others were contacted recently;
    /// nothing was sent.
    case tooManyHosts(String)
    /// No HTTP answer after the retries; `.refusedDestination` when every address the host resolved to is
    /// refused by the `DestinationPolicy` (no socket was opened).
    case transport(HTTPExchangeError, attempts: Int)
    /// Encrypting or signing failed (a subscription key that is not a valid point, say).
    case encryption(WebPushEncryptionError)
    /// The sender was shut down before the final answer.
    case shutdown
    /// The message's run was cancelled (`RetryScope.cancel`) while it waited for a retry, or before it was sent.
    case cancelled(attempts: Int)
    /// The next retry would have gone out after the message's deadline (`WebPushNotification.deadline`).
    case expired(attempts: Int)

    package var description: String {
        switch self {
        case .cancelled(let attempts): return "cancelled after \(attempts) attempt(s)"
        case .expired(let attempts): return "expired after \(attempts) attempt(s): the next retry would come too late"
        case .hostNotAllowed(let host): return "push service host \(host) is not allowed"
        case .tooManyHosts(let host): return "push service host \(host) is over the cap on distinct hosts"
        case .transport(let error, let attempts): return "no answer after \(attempts) attempt(s): \(error)"
        case .encryption(let error): return "encryption failed: \(error)"
        case .shutdown: return "shut down"
        }
    }
}

/// The final result of one notification, retries included.
package enum WebPushResult: Sendable, Equatable {
    /// The push service's final answer, classified, and how many sends it took.
    case response(WebPushOutcome, attempts: Int)
    case failure(WebPushFailure)
}

/// Counters for metrics; a snapshot.
package struct WebPushSenderStats: Sendable, Equatable, SenderGauges {
    /// Accepted and not final (in transfer or waiting for a retry).
    package var requestsInFlight = 0
    /// `submit` calls suspended because the window is full.
    package var waitingForWindow = 0
    /// Transfers attached to curl right now.
    package var transfersInFlight = 0
    /// TCP/TLS connections opened so far.
    package var connectionsOpened = 0
    /// Sends beyond each notification's first.
    package var retries = 0
    /// Final answers by HTTP status.
    package var responsesByStatus: [Int: Int] = [:]
    /// Final `.accepted` outcomes.
    package var accepted = 0
    /// Final `.subscriptionGone` outcomes (the subscription is to be removed).
    package var subscriptionsGone = 0
    /// Notifications refused before sending: host or port not allowed, over the distinct-host cap, or every address
    /// refused by the policy.
    package var refusedDestinations = 0
    /// Notifications that ended without an answer (other than refused destinations).
    package var transportFailures = 0
    /// Notifications that could not be encrypted.
    package var encryptionFailures = 0
    /// Notifications that ended because of shutdown.
    package var shutdownFailures = 0
    /// Ended because their publish run was cancelled while they waited for a retry (`RetryScope`).
    package var cancelled = 0
    /// Ended because their next retry would have gone out after their deadline (`RetryDeadline`).
    package var expired = 0

    package init() {}
}
