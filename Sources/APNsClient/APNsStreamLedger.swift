/// The request bookkeeping of one connection slot as a pure state machine (no curl, no clock, no sockets): when a
/// stream counts as answered, what curl's end of a transfer means for its request, and how many requests may
/// start now. `APNsConnectionStateMachine` feeds it what curl reports and acts on the answers; the rules are tested
/// without sockets in `APNsStreamLedgerTests`.
///
/// Why it exists (issue 10, item 6): libcurl 7.88 reports an HTTP/2 transfer done only after it reads the socket
/// once more, so when the connection is reset just after a `200` (a server closing after GOAWAY), the answered
/// transfer ends as `CURLE_RECV_ERROR` and was re-sent: a duplicate notification. And a transfer whose answer
/// curl has already parsed can wait for that extra read until the request timeout. Here a request counts as
/// answered the moment its `200` header block is complete, whatever curl reports later.
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
    }

    private struct Stream {
        /// Started while the connection was cold (one such probe at a time).
        var probe: Bool
        /// Reported answered before curl ended the transfer.
        var settled = false
    }

    /// Whether the current connection has had a request accepted with our token. Until then APNs allows one stream,
    /// and a burst sent before its SETTINGS arrive is refused (RST_STREAM REFUSED_STREAM), which makes curl drop
    /// and reopen the connection: measured against the mock, 46 refused streams and 3 connections for 200
    /// requests. So a cold connection carries one request at a time until the first answer.
    private(set) var warm = false
    private var streams: [Int: Stream] = [:]
    private var probes = 0

    /// Streams started and not yet ended by curl.
    var inFlight: Int { streams.count }

    /// Whether another request may start now. A cold connection allows one probe at a time; transfers started
    /// before it went cold (on a connection that is gone, or stuck in curl) never hold the probe back.
    var mayStart: Bool { warm || probes == 0 }

    /// Records that transfer `id` was handed to curl.
    mutating func started(_ id: Int) {
        let probe = !warm
        if probe { probes += 1 }
        streams[id] = Stream(probe: probe)
    }

    /// The header block of transfer `id` is complete with a final `status`. Returns true when the request is
    /// answered now: APNs answers `200` with headers only, so nothing that follows can change it.
    mutating func headersComplete(_ id: Int, status: Int) -> Bool {
        guard status == 200, var stream = streams[id], !stream.settled else { return false }
        stream.settled = true
        if stream.probe {
            stream.probe = false  // answered: no longer holds the gate, even while curl keeps the transfer
            probes -= 1
        }
        streams[id] = stream
        warm = true
        return true
    }

    /// curl ended transfer `id`; returns what the request's outcome is.
    mutating func ended(_ id: Int, _ completion: Completion) -> Settlement {
        let stream = streams.removeValue(forKey: id)
        if stream?.probe == true { probes -= 1 }
        let settled = stream?.settled == true
        switch completion {
        case .completed(let status, let tokenRejected):
            // Any answer other than a token rejection means APNs accepted our token on this connection.
            if !tokenRejected { warm = true }
            return settled ? .alreadySettled : .answered(status: status)
        case .failed(let kind, let status):
            if kind == .connection { warm = false }  // curl opens a new connection: cold again
            if settled { return .alreadySettled }
            // A 200 status line means APNs accepted the notification, even if the connection died before curl
            // finished the stream: re-sending it would deliver it twice.
            if status == 200 { return .answered(status: 200) }
            // An error answer cut off mid-body was not delivered: sending it again cannot duplicate anything.
            return .unanswered(status > 0 && kind != .fatal ? .connection : kind)
        }
    }

    /// No answer for a while: the connection may be gone (curl replaces idle ones; APNs closes them), so the
    /// next request probes it first.
    mutating func goCold() { warm = false }
}
