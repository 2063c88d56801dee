import APNsClient
import FCMClient
import Foundation
import JSON
import Logging
import PublishEngine
import WebPush

/// Each instance's FCM and Web Push state as `/ready` and the console's overview show it, next to the APNs
/// `apnsCredentials` string: whether credentials are `loaded`, `not configured`, or `refused` (the token endpoint,
/// FCM or a push service turned them down: see `problem`), and the sender's gauges. A refusal does not fail
/// readiness (the server still accepts and queues work, as for missing APNs credentials); every delivery it
/// affects is recorded as failed with its reason, and the devices are kept.
enum PlatformHealth {
    /// `"loaded"`, `"not configured"` or `"refused"` for FCM.
    static func fcmCredentials(_ instance: InstanceRuntime) -> String {
        guard let sender = instance.fcm else { return "not configured" }
        return sender.authProblem == nil ? "loaded" : "refused"
    }

    /// `"loaded"`, `"not configured"` or `"refused"` for Web Push.
    static func webCredentials(_ instance: InstanceRuntime) -> String {
        guard let sender = instance.web else { return "not configured" }
        return sender.credentialProblems.isEmpty ? "loaded" : "refused"
    }

    /// The instance's `fcm` object.
    static func fcm(_ instance: InstanceRuntime) -> JSONValue {
        guard let sender = instance.fcm else { return .object(["credentials": .string("not configured")]) }
        let problem = sender.authProblem
        let stats = sender.stats()
        return .object([
            "credentials": .string(problem == nil ? "loaded" : "refused"),
            "projectId": instance.config.fcm.map { .string($0.projectID) } ?? .null,
            "problem": problem.map(json) ?? .null,
            "requestsInFlight": .int(stats.requestsInFlight),
            "waitingForWindow": .int(stats.waitingForWindow),
            "connectionsOpened": .int(stats.connectionsOpened),
            "accessTokenExpiresInSeconds": stats.accessTokenExpiresIn.map { .int(Int(saturating: $0.rounded())) }
                ?? .null,
            "sent": .int(stats.sent),
            "transportFailures": .int(stats.transportFailures),
            "accessTokenFailures": .int(stats.accessTokenFailures),
        ])
    }

    /// The instance's `unifiedpush` object: `configured` or `not configured`, the sender's counters and the hosts
    /// counted towards `maxHosts` are not listed (users chose them; they are not the operator's to read).
    static func unifiedpush(_ instance: InstanceRuntime) -> JSONValue {
        guard let sender = instance.unifiedpush, let settings = instance.config.unifiedpush else {
            return .object(["state": .string("not configured")])
        }
        return .object(
            webPushStats(sender.stats()).merging([
                "state": .string("configured"),
                "ports": .array(settings.ports.sorted().map { .int($0) }),
                "maxHosts": .int(settings.maxHosts),
            ]) { first, _ in first })
    }

    /// `"loaded"` (a token was issued, or none asked for yet), `"not configured"` or `"refused"` (Huawei's OAuth
    /// endpoint turned the client ID and secret down) for Huawei Push Kit.
    static func hmsCredentials(_ instance: InstanceRuntime) -> String {
        guard let sender = instance.hms else { return "not configured" }
        return sender.accessTokens.refusal == nil ? "loaded" : "refused"
    }

    /// The instance's `hms` object: credentials, the refusal if any, token requests made and the sender's counters.
    static func hms(_ instance: InstanceRuntime) -> JSONValue {
        guard let sender = instance.hms, let settings = instance.config.hms else {
            return .object(["credentials": .string("not configured")])
        }
        let stats = sender.stats()
        return .object([
            "credentials": .string(hmsCredentials(instance)),
            "appId": .string(settings.appID),
            "problem": sender.accessTokens.refusal.map { .string($0.description) } ?? .null,
            "accessTokenRequests": .int(sender.tokenFetches),
            "accessTokensAdopted": .int(sender.accessTokens.adoptCount),
            "requests": .int(stats.requests),
            "accepted": .int(stats.accepted),
            "failed": .int(stats.failed),
        ])
    }

    /// The instance's `web` object.
    static func web(_ instance: InstanceRuntime) -> JSONValue {
        guard let sender = instance.web else { return .object(["credentials": .string("not configured")]) }
        let problems = sender.credentialProblems
        return .object(
            webPushStats(sender.stats()).merging([
                "credentials": .string(problems.isEmpty ? "loaded" : "refused"),
                "vapidPublicKey": instance.config.web.map { .string($0.keyPair.publicKeyBase64URL) } ?? .null,
                "problems": .array(problems.map(json)),
            ]) { first, _ in first })
    }

    static func json(_ problem: FCMAuthProblem) -> JSONValue {
        .object([
            "kind": .string(problem.kind.rawValue),
            "detail": .string(problem.detail),
            "since": .string(problem.since.iso8601),
            "count": .int(problem.count),
        ])
    }

    static func json(_ problem: WebPushCredentialProblem) -> JSONValue {
        .object([
            "host": .string(problem.host),
            "status": .int(problem.status),
            "detail": .string(problem.detail),
            "since": .string(problem.since.iso8601),
            "count": .int(problem.count),
        ])
    }

    /// What a Web Push sender (the `web` one, or UnifiedPush's) reports about its window and answers.
    private static func webPushStats(_ stats: WebPushSenderStats) -> [String: JSONValue] {
        [
            "requestsInFlight": .int(stats.requestsInFlight), "waitingForWindow": .int(stats.waitingForWindow),
            "connectionsOpened": .int(stats.connectionsOpened), "accepted": .int(stats.accepted),
            "transportFailures": .int(stats.transportFailures), "refusedDestinations": .int(stats.refusedDestinations),
        ]
    }
}
