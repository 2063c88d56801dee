import JSON

/// What the mock saw: requests, provider tokens, counters and connections, as the control API reports them.
extension MockAPNs {
    /// One request as the mock received and answered it.
    package struct Request: Sendable {
        /// Increasing sequence number (across connections), starting at 1 after each `reset()`.
        package var seq: Int
        /// Seconds since the epoch when the request was complete.
        package var time: Double
        /// The connection's id (1, 2, … in accept order).
        package var connection: Int
        package var stream: Int
        package var method: String
        package var path: String
        /// The device token from the path (nil when the path had none).
        package var token: String?
        /// Header names (lower-case) to values; a repeated header has several values.
        package var headers: [String: [String]]
        /// The body parsed as JSON (nil when it is empty or not JSON), whatever the answer.
        package var payload: JSONValue?
        package var payloadSize: Int
        /// The status and reason answered (or to be answered after a delay; `.drop` records the status too).
        package var status: Int
        package var reason: String?
        /// The 410 `timestamp` answered, if any.
        package var timestamp: Int64?
        /// The `apns-id` answered: the request's own or one the mock generated.
        package var apnsID: String
        package var action: Action
        /// The provider token's key ID, issuer and issued-at (nil unless its signature verified).
        package var jwt: ProviderToken?

        /// The first value of a header, or nil.
        package func header(_ name: String) -> String? { headers[name.lowercased()]?.first }

        /// Reads one recorded request as the control API answers it.
        init(json: JSONValue) throws(MockJSONError) {
            let c = try MockJSONObject(json)
            seq = try c.int("seq")
            time = try c.double("time")
            connection = try c.int("connection")
            stream = try c.int("stream")
            method = try c.string("method")
            path = try c.string("path")
            token = try c.optionalString("token")
            payload = c.object["payload"].flatMap { $0.isNull ? nil : $0 }
            payloadSize = try c.int("payload_size")
            status = try c.int("status")
            reason = try c.optionalString("reason")
            timestamp = try c.optionalInt("timestamp").map(Int64.init)
            apnsID = try c.string("apns_id")
            guard let action = Action(rawValue: try c.string("action")) else {
                throw MockJSONError("action", "unknown")
            }
            self.action = action
            jwt = try c.optionalObject("jwt").map { (token) throws(MockJSONError) in
                ProviderToken(kid: try token.string("kid"), iss: try token.string("iss"), iat: try token.double("iat"))
            }
            // The mock writes a single value as a string and a repeated header as a list.
            headers = try c.objectMembers("headers").mapValues { value in
                switch value {
                case .string(let s): return [s]
                case .array(let items): return items.compactMap(\.stringValue)
                default: return []
                }
            }
        }
    }

    /// The verified claims of a provider token.
    package struct ProviderToken: Sendable, Equatable {
        package var kid: String
        package var iss: String
        package var iat: Double
    }

    /// Counters since start-up or the last `reset()`.
    package struct Stats: Sendable {
        package var requests: Int
        /// Status code (as a string, e.g. "200") to count.
        package var byStatus: [String: Int]
        package var byReason: [String: Int]
        package var connectionsOpened: Int
        package var connectionsOpen: Int
        /// Streams refused with RST_STREAM REFUSED_STREAM (over the advertised limit, or after GOAWAY).
        package var refusedStreams: Int
        package var goawaysSent: Int
        package var connectionsDropped: Int
        /// Requests decided but never answered: dropped, above a GOAWAY's last-stream-id, reset by the client, or
        /// their connection closed before the delayed answer.
        package var unanswered: Int
        /// The most streams any connection had in flight at once.
        package var maxConcurrentStreamsObserved: Int
        /// The connections open now.
        package var connections: [Connection]
        /// Device token to (status → count) of the answers decided; empty when fetched with
        /// `stats(includeTokens: false)`. Includes answers never sent (see `sentPerToken`).
        package var perToken: [String: [String: Int]]
        /// Device token to (status → count) of the answers actually written to a connection.
        package var sentPerToken: [String: [String: Int]]

        /// How many requests were answered with `status`.
        package func count(status: Int) -> Int { byStatus[String(status)] ?? 0 }

        /// Reads the counters as the control API answers them.
        init(json: JSONValue) throws(MockJSONError) {
            let c = try MockJSONObject(json)
            requests = try c.int("requests")
            byStatus = try c.intMap("by_status")
            byReason = try c.intMap("by_reason")
            connectionsOpened = try c.int("connections_opened")
            connectionsOpen = try c.int("connections_open")
            refusedStreams = try c.int("refused_streams")
            goawaysSent = try c.int("goaways_sent")
            connectionsDropped = try c.int("connections_dropped")
            unanswered = try c.int("unanswered")
            maxConcurrentStreamsObserved = try c.int("max_concurrent_streams_observed")
            connections = try c.array("connections").map { (item) throws(MockJSONError) in try Connection(json: item) }
            perToken = try c.nestedIntMap("per_token")
            sentPerToken = try c.nestedIntMap("sent_per_token")
        }
    }

    /// One open connection as the mock sees it.
    package struct Connection: Sendable {
        package var id: Int
        package var requests: Int
        /// Distinct provider tokens accepted on this connection.
        package var tokensSeen: Int
        /// The key ID bound on the first valid push (nil before it).
        package var boundKid: String?
        package var advertisedMaxStreams: Int
        package var maxConcurrentStreamsObserved: Int
        package var inFlight: Int

        /// Reads one connection as the control API answers it.
        init(json: JSONValue) throws(MockJSONError) {
            let c = try MockJSONObject(json)
            id = try c.int("id")
            requests = try c.int("requests")
            tokensSeen = try c.int("tokens_seen")
            boundKid = try c.optionalString("bound_kid")
            advertisedMaxStreams = try c.int("advertised_max_streams")
            maxConcurrentStreamsObserved = try c.int("max_concurrent_streams_observed")
            inFlight = try c.int("in_flight")
        }
    }
}
