/// The request bookkeeping of one connection slot as a pure state machine (no curl, no clock, no sockets): when a
/// stream counts as answered, what curl's end of a transfer means for its request, how many requests may start
/// now, and which connection each request went out on. `APNsConnectionStateMachine` feeds it what curl reports
/// and acts on the answers; the rules are tested without sockets in `APNsStreamLedgerTests`.
///
/// Why it exists (issue 10, item 6): libcurl 7.88 reports an HTTP/2 transfer done only after it reads the socket
/// once more, so when the connection is reset just after a `200` (a server closing after GOAWAY), the answered
/// transfer ends as `CURLE_RECV_ERROR` and was re-sent: a duplicate notification. And a transfer whose answer
/// curl has already parsed can wait for that extra read until the request timeout. Here a request counts as
/// answered the moment its `200` header block is complete, whatever curl reports later.
///
/// Connections (issue 24, item 4): APNs opens every connection at `SETTINGS_MAX_CONCURRENT_STREAMS` 1 and raises
/// it only after the first answer. curl does not wait for that: after a GOAWAY the transfers queued in curl all
/// went onto the new connection at once, the extra streams were refused, and curl 7.88 retried each refusal by
/// itself and closed the new connection for it ("Connection died, retrying a fresh connect"), again and again
/// (up to "tried 5 times before giving up"), stranding answers on the connections it abandoned. So the ledger
/// learns from curl, just before each request is sent (`sending`), which connection it goes on (its local port),
/// and holds every request but one back from a connection that has not answered yet: a held-back request was never
/// sent, and starts again as soon as the probe is answered.
struct APNsStreamLedger {
    /// What curl said when it ended a transfer.
    enum Completion: Equatable {
        /// The transfer completed with this HTTP status; `tokenRejected` when its reason indicts the provider token.
        case completed(status: Int, tokenRejected: Bool)
        /// The transfer failed. `status` is the response status curl had parsed before the failure (0: none).
        case failed(APNsTransportError.Kind, status: Int)
    }

    /// What the connection must do with a request whose transfer ended.
    enum Settlement: Equatable {
        /// Report this answer (the caller adds the body's reason).
        case answered(status: Int)
        /// No usable answer: hand the failure to the retry policy (a connection failure is re-sent at once).
        case unanswered(APNsTransportError.Kind)
        /// The request was reported answered when its header block arrived: only recycle the transfer.
        case alreadySettled
        /// `sending` held the request back before curl sent any of it: start it again, not counted as an attempt.
        case heldBack
    }

    /// Where a request stands, for the log line of a request timeout (the last resort: every other end is an
    /// answer, a refusal or a failure curl reports).
    struct Diagnosis: Equatable, CustomStringConvertible {
        enum Phase: String, Equatable {
            /// curl never picked a connection for it: nothing was sent.
            case waitingForConnection = "waiting for a connection, never sent"
            /// Sent; no answer header block yet.
            case sent = "sent, no answer"
            /// An error answer's header block arrived; its body did not.
            case answerIncomplete = "error answer headers received, body incomplete"
            /// The ledger does not know the stream (already ended).
            case unknown
        }

        var phase: Phase
        /// Sent on the connection new requests go to (false: on one curl has replaced).
        var onCurrentConnection: Bool
        /// Sent as the first request of a connection that had not answered yet.
        var probe: Bool
        /// The slot's current connection has answered since it was opened (or since it was last idle).
        var connectionWarm: Bool
        /// The current connection's local port (0: none known).
        var connectionPort: Int
        /// Unanswered requests on the current connection, and requests waiting for curl to pick a connection.
        var onConnection: Int
        var waiting: Int

        var description: String {
            "stream: \(phase.rawValue)\(probe ? " (probe)" : "")\(onCurrentConnection ? "" : " on a replaced connection"); "
                + "connection: \(connectionWarm ? "warm" : "cold") port \(connectionPort), \(onConnection) unanswered, "
                + "\(waiting) waiting for a connection"
        }
    }

    private struct Stream {
        /// The local port of the connection curl sent it on; nil until curl picks one.
        var connection: Int?
        /// The first request on a connection that had not answered yet.
        var probe = false
        /// Reported answered before curl ended the transfer.
        var settled = false
        /// Refused by `sending`: curl aborts it before sending anything.
        var heldBack = false
        /// The status of a header block that did not settle the request (an error answer).
        var status = 0
    }

    /// Whether the current connection has had a request accepted with our token. Until then APNs allows one stream,
    /// and a burst sent before its SETTINGS arrive is refused (RST_STREAM REFUSED_STREAM), which makes curl drop
    /// and reopen the connection: measured against the mock, 46 refused streams and 3 connections for 200
    /// requests. So a cold connection carries one request at a time until the first answer.
    private(set) var warm = false
    /// The local port of the connection new requests go to (nil: none known, or it failed).
    private(set) var connection: Int?
    private var streams: [Int: Stream] = [:]

    /// Streams started and not yet ended by curl.
    var inFlight: Int { streams.count }

    /// Whether another request may start now. A cold connection allows one probe at a time: nothing may start
    /// while a request waits for curl to pick a connection or is unanswered on the current one; requests on a
    /// connection curl has replaced (or that failed) never hold the probe back.
    var mayStart: Bool {
        warm || !streams.values.contains { holdsTheGate($0) }
    }

    private func holdsTheGate(_ stream: Stream) -> Bool {
        !stream.settled && !stream.heldBack && (stream.connection == nil || stream.connection == connection)
    }

    /// Records that transfer `id` was handed to curl.
    mutating func started(_ id: Int) {
        streams[id] = Stream()
    }

    /// curl is about to send transfer `id` on the connection with local port `port` (a new one, or one it reuses).
    /// Returns false when the request must not go out: the connection has not answered yet and already carries a
    /// request (or another one is about to be sent on it), so this one would be refused.
    mutating func sending(_ id: Int, connection port: Int) -> Bool {
        guard var stream = streams[id] else { return true }
        if port != connection {
            // curl opened another connection (GOAWAY, a reset, an idle one replaced): cold until it answers.
            connection = port
            warm = false
        }
        if !warm {
            let busy = streams.contains { other in
                other.key != id && !other.value.settled && !other.value.heldBack && other.value.connection == port
            }
            if busy {
                stream.heldBack = true
                streams[id] = stream
                return false
            }
            stream.probe = true
        }
        stream.connection = port
        streams[id] = stream
        return true
    }

    /// The header block of transfer `id` is complete with a final `status`. Returns true when the request is
    /// answered now: APNs answers `200` with headers only, so nothing that follows can change it.
    mutating func headersComplete(_ id: Int, status: Int) -> Bool {
        guard var stream = streams[id], !stream.settled, !stream.heldBack else { return false }
        guard status == 200 else {
            stream.status = status
            streams[id] = stream
            return false
        }
        stream.settled = true
        streams[id] = stream
        // An answer on a connection curl has replaced says nothing about the current one.
        if stream.connection == connection { warm = true }
        return true
    }

    /// curl ended transfer `id`; returns what the request's outcome is.
    mutating func ended(_ id: Int, _ completion: Completion) -> Settlement {
        let stream = streams.removeValue(forKey: id)
        if stream?.heldBack == true { return .heldBack }
        let settled = stream?.settled == true
        let current = stream == nil || stream?.connection == nil || stream?.connection == connection
        switch completion {
        case .completed(let status, let tokenRejected):
            // Any answer other than a token rejection means APNs accepted our token on this connection.
            if !tokenRejected && current { warm = true }
            return settled ? .alreadySettled : .answered(status: status)
        case .failed(let kind, let status):
            if kind == .connection && current {
                // curl opens a new connection: cold again, and the old one's streams no longer hold the gate.
                warm = false
                connection = nil
            }
            if settled { return .alreadySettled }
            // A 200 status line means APNs accepted the notification, even if the connection died before curl
            // finished the stream: re-sending it would deliver it twice.
            if status == 200 { return .answered(status: 200) }
            // An error answer cut off mid-body was not delivered: sending it again cannot duplicate anything.
            if status > 0 && kind != .fatal { return .unanswered(.connection) }
            // A request curl never sent (still waiting for a connection at the timeout) is as safe to send again
            // as a refused one.
            if kind == .timeout && stream != nil && stream?.connection == nil { return .unanswered(.connection) }
            return .unanswered(kind)
        }
    }

    /// Where transfer `id` and its connection stand (for the request-timeout warning).
    func diagnosis(of id: Int) -> Diagnosis {
        let stream = streams[id]
        let phase: Diagnosis.Phase
        if let stream {
            phase = stream.connection == nil ? .waitingForConnection : stream.status > 0 ? .answerIncomplete : .sent
        } else {
            phase = .unknown
        }
        var onConnection = 0
        var waiting = 0
        for other in streams.values where !other.settled && !other.heldBack {
            if other.connection == nil { waiting += 1 } else if other.connection == connection { onConnection += 1 }
        }
        return Diagnosis(
            phase: phase, onCurrentConnection: stream?.connection == nil || stream?.connection == connection,
            probe: stream?.probe ?? false, connectionWarm: warm, connectionPort: connection ?? 0,
            onConnection: onConnection, waiting: waiting)
    }

    /// No answer for a while: the connection may be gone (curl replaces idle ones; APNs closes them), so the
    /// next request probes it first.
    mutating func goCold() { warm = false }
}
