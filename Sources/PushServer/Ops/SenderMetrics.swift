import APNsClient
import FCMClient
import HTTPClient
import Observability
import PublishEngine
import PushStore
import WebPush

/// The senders' gauges in `/metrics`, one series per platform (`apns`, `fcm`, `web`: FCM and Web Push summed over
/// the instances, each of which has its own sender), plus the FCM access token's age and remaining life per
/// configured instance. Every label set is fixed by the configuration, so the series stay bounded. Read at scrape
/// time from the senders' own counters, so they are never stale.
enum SenderMetrics {
    static func declare(_ metrics: Metrics) {
        metrics.declare(.senderRequestsInFlight)
        metrics.declare(.senderWaitingForWindow)
        metrics.declare(.senderTransfersInFlight)
        metrics.declare(.senderConnectionsOpened)
        metrics.declare(.senderRetries)
        metrics.declare(.senderCredentialProblems)
        metrics.declare(.fcmAccessTokenAge)
        metrics.declare(.fcmAccessTokenExpiresIn)
    }

    /// Registers the collector that copies the gauges at every scrape.
    static func collect(into metrics: Metrics, apns: APNsClient, instances: @escaping @Sendable () -> [InstanceRuntime])
    {
        metrics.addCollector { metrics in
            var gauges: [Platform: Gauges] = [:]
            let apnsStats = apns.stats()
            gauges[.apns] = Gauges(
                requestsInFlight: apnsStats.requestsInFlight, waiting: apnsStats.waitingForWindow,
                transfers: apnsStats.streamsInFlight, connectionsOpened: apnsStats.connectionsOpened,
                retries: apnsStats.retries, problems: 0)
            var fcm = Gauges()
            var web = Gauges()
            var unifiedpush = Gauges()
            let served = instances()
            for instance in served {
                if let sender = instance.unifiedpush {
                    unifiedpush.add(Gauges(sender.stats(), problems: sender.credentialProblems.isEmpty ? 0 : 1))
                }
                if let sender = instance.fcm {
                    let stats = sender.stats()
                    fcm.add(Gauges(stats, problems: sender.authProblem == nil ? 0 : 1))
                    let labels: KeyValuePairs<String, String> = ["instance": instance.config.id]
                    if let age = stats.accessTokenAge, let left = stats.accessTokenExpiresIn {
                        metrics.set(.fcmAccessTokenAge, labels, to: age.rounded())
                        metrics.set(.fcmAccessTokenExpiresIn, labels, to: left.rounded())
                    }
                }
                if let sender = instance.web {
                    web.add(Gauges(sender.stats(), problems: sender.credentialProblems.isEmpty ? 0 : 1))
                }
            }
            gauges[.fcm] = fcm
            gauges[.web] = web
            if served.contains(where: { $0.unifiedpush != nil }) { gauges[.unifiedpush] = unifiedpush }
            for (platform, value) in gauges {
                let labels: KeyValuePairs<String, String> = ["platform": MetricLabel.platform(platform)]
                metrics.set(.senderRequestsInFlight, labels, to: Double(value.requestsInFlight))
                metrics.set(.senderWaitingForWindow, labels, to: Double(value.waiting))
                metrics.set(.senderTransfersInFlight, labels, to: Double(value.transfers))
                metrics.set(.senderConnectionsOpened, labels, to: Double(value.connectionsOpened))
                metrics.set(.senderRetries, labels, to: Double(value.retries))
                if platform != .apns {
                    metrics.set(.senderCredentialProblems, labels, to: Double(value.problems))
                }
            }
        }
    }

    fileprivate struct Gauges {
        var requestsInFlight = 0
        var waiting = 0
        var transfers = 0
        var connectionsOpened = 0
        var retries = 0
        var problems = 0

        mutating func add(_ other: Gauges) {
            requestsInFlight += other.requestsInFlight
            waiting += other.waiting
            transfers += other.transfers
            connectionsOpened += other.connectionsOpened
            retries += other.retries
            problems += other.problems
        }
    }
}

extension SenderMetrics.Gauges {
    /// The gauges of a sender on the shared HTTP stack (FCM, Web Push, UnifiedPush), with its credential problems.
    fileprivate init(_ stats: some RetryingSenderStats, problems: Int) {
        self.init(
            requestsInFlight: stats.requestsInFlight, waiting: stats.waitingForWindow,
            transfers: stats.transfersInFlight, connectionsOpened: stats.connectionsOpened,
            retries: stats.retries, problems: problems)
    }
}

/// The stats of the senders on the shared HTTP stack: the gauges `SenderLedger` fills, and the retries each counts.
private protocol RetryingSenderStats: SenderGauges {
    var retries: Int { get }
}

extension FCMSenderStats: RetryingSenderStats {}
extension WebPushSenderStats: RetryingSenderStats {}
