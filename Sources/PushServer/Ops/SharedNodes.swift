import Foundation
import JSON
import Logging
import PushStore

/// The nodes that share this server's database (PostgreSQL), as `/ready`'s details show them: which are live, on
/// which version, and whether this node's own heartbeat is among them. An operator reads it during a rolling
/// upgrade (which nodes still run the old release) and when a node was killed (it drops out after `liveWithin`).
struct SharedNodes: Sendable {
    let store: any ShardedPublishQueue
    /// This node's worker id, as its heartbeats record it.
    let selfID: String
    let liveWithin: Duration
    /// Nodes listed at most. The table holds the fleet, not anything a client can grow, but a detail page stays
    /// small; past the bound `truncated` says the list is not the whole fleet.
    static let listLimit = 100

    /// `{"self", "error"}`: the nodes could not be read, for `reason`.
    func unavailable(reason: JSONValue) -> JSONValue {
        .object(["self": .string(selfID), "error": reason])
    }

    /// `{"self", "selfLive", "live", "liveWithinSeconds", "truncated", "list": [{"id", "version", "startedAt",
    /// "lastSeen"}]}`. - Throws: the store's error when the database does not answer (the caller reports it with
    /// `unavailable`; readiness is decided by the store check, not here).
    func json(now: Date) async throws -> JSONValue {
        let nodes = try await store.liveNodes(now: now, liveWithin: liveWithin, limit: Self.listLimit + 1)
        let listed = nodes.prefix(Self.listLimit)
        return .object([
            "self": .string(selfID),
            "selfLive": .bool(nodes.contains { $0.nodeID == selfID }),
            "live": .int(listed.count),
            "liveWithinSeconds": .int(Int(liveWithin.components.seconds)),
            "truncated": .bool(nodes.count > Self.listLimit),
            "list": .array(
                listed.map { node in
                    .object([
                        "id": .string(node.nodeID),
                        "version": .string(node.version),
                        "startedAt": .string(node.startedAt.iso8601),
                        "lastSeen": .string(node.lastSeen.iso8601),
                    ])
                }),
        ])
    }
}
