import Foundation
import PushStore

/// The webhook and Beams bridge outboxes written once: `WebhookSQL`'s and `BeamsForwardSQL`'s statements in the
/// backend's transactions. The claims stay per backend (under SQLite's one writer a read and a move of each due
/// time; on PostgreSQL `FOR UPDATE SKIP LOCKED`, so each row goes to one node).
extension SQLStoreBackend {
    // MARK: Webhooks

    package func enqueueWebhook(_ request: WebhookRequest, now: Date) async throws -> Int64 {
        try await write(StoreWrite()) { connection in try WebhookSQL.enqueue(request, now: now, on: connection) }
    }

    package func nextWebhookDue() async throws -> Date? {
        try await read { connection in try WebhookSQL.nextDue(on: connection) }
    }

    package func markWebhook(_ id: Int64, outcome: WebhookOutcome, now: Date) async throws {
        try await write(StoreWrite()) { connection in
            try WebhookSQL.mark(id, outcome: outcome, now: now, on: connection)
        }
    }

    // MARK: Beams bridge

    package func enqueueBeamsForward(_ forward: BeamsForward, now: Date) async throws -> Bool {
        try await write(StoreWrite(tenant: forward.instanceID)) { connection in
            try BeamsForwardSQL.insert(forward, now: now, due: nil, on: connection)
        }
    }

    package func markBeamsForward(_ id: Int64, outcome: BeamsForwardOutcome, now: Date) async throws {
        try await write(StoreWrite()) { connection in
            try BeamsForwardSQL.mark(id, outcome: outcome, now: now, on: connection)
        }
    }

    package func nextBeamsForwardDue() async throws -> Date? {
        try await read { connection in try BeamsForwardSQL.nextDue(on: connection) }
    }

    package func beamsForward(instanceID: String, publishID: String) async throws -> BeamsForwardRecord? {
        try await read { connection in
            try BeamsForwardSQL.record(instanceID: instanceID, publishID: publishID, on: connection)
        }
    }
}
