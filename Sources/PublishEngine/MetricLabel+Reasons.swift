import APNsClient
import Observability

/// The reason label set: the engine's outcome reasons, so it is built here, where they are known, and not in
/// `Observability`, which the engine imports.
extension MetricLabel {
    /// Every reason a publish outcome can carry: Apple's documented ones, the server's own, and `HTTP<status>` for
    /// an answer without a reason.
    package static let reasons: Set<String> = Set(APNsReason.known.map(\.rawValue)).union(DeliveryOutcome.localReasons)
        .union(statuses.map { "HTTP\($0)" }).union(DeliveryOutcome.fcmReasons).union(DeliveryOutcome.webReasons)
        .union(HMSAnswer.knownCodes).union(HMSDispatch.localReasons)

    /// An outcome reason as a label: one of `reasons`, empty for none, else `other` (APNs' unknown reasons are
    /// kept verbatim in the publish status, where one publish bounds them, but not here).
    static func reason(_ raw: String?) -> String {
        guard let raw, !raw.isEmpty else { return "" }
        return reasons.contains(raw) ? raw : other
    }
}
