import JSON

extension MockAPNs {
    /// The environment the mock pretends to be. Only `sandbox` answers `apns-unique-id` (as Apple's does).
    public enum Environment: String, Sendable {
        case sandbox
        case production
    }

    /// What the mock does after deciding a scripted answer (see `Behaviour`).
    public enum Action: String, Sendable {
        /// Answer normally.
        case answer
        /// Answer, then send GOAWAY carrying `{"reason":…}` as debug data and close once in-flight streams are
        /// answered.
        case goaway
        /// Send GOAWAY whose last-stream-id excludes this stream, without answering it (the client may retry).
        case goawayUnanswered = "goaway_unanswered"
        /// Close the TCP connection without answering.
        case drop
        /// Answer, then close the TCP connection at once (a reset, with whatever else is in flight unanswered).
        case answerThenDrop = "answer_then_drop"
    }

    /// A scripted answer for one device token (or, with a key ending in `*`, every token with that prefix).
    /// It applies only to requests that pass every APNs check: a malformed request still gets Apple's error.
    public struct Behaviour: Sendable, Equatable {
        /// HTTP status to answer. Default 200.
        public var status: Int
        /// Apple's `reason`; required for any status other than 200.
        public var reason: String?
        /// Milliseconds since the epoch for a 410 answer; the mock uses "now" when nil.
        public var timestamp: Int64?
        /// Applies to the first `times` matching requests, then the token answers normally; nil: always.
        public var times: Int?
        /// Delay before the answer, in milliseconds (added to the global `Config.delayMs`).
        public var delayMs: Int
        /// What to do besides answering. Default `.answer`.
        public var action: Action
        /// The HTTP/2 error code of the GOAWAY for `.goaway`/`.goawayUnanswered`. Default 0 (NO_ERROR).
        public var goawayError: Int

        public init(status: Int = 200, reason: String? = nil, timestamp: Int64? = nil, times: Int? = nil,
                    delayMs: Int = 0, action: Action = .answer, goawayError: Int = 0) {
            self.status = status
            self.reason = reason
            self.timestamp = timestamp
            self.times = times
            self.delayMs = delayMs
            self.action = action
            self.goawayError = goawayError
        }

        /// The control API's JSON for this behaviour (absent optionals left out).
        var json: JSONValue {
            var object: [String: JSONValue] = [
                "status": .int(status), "delay_ms": .int(delayMs), "action": .string(action.rawValue),
                "goaway_error": .int(goawayError),
            ]
            object["reason"] = reason.map(JSONValue.string)
            object["timestamp"] = timestamp.map { .int(Int($0)) }
            object["times"] = times.map(JSONValue.int)
            return .object(object)
        }
    }

    /// Run-time switches for `setConfig`; nil fields are left unchanged.
    public struct Config: Sendable, Equatable {
        /// Delay added to every answer, in milliseconds (a "slow APNs"). Start-up default 0.
        public var delayMs: Int?
        /// SETTINGS_MAX_CONCURRENT_STREAMS after the first valid token; changing it re-advertises the value to
        /// authenticated connections at once. Start-up default: `start(maxStreams:)`.
        public var maxStreams: Int?
        /// Whether `requests()` records each request. Off, only the per-token counts of `stats()` are kept
        /// (for 100k-request runs). Default true.
        public var record: Bool?
        /// How many recent requests are kept. Default 10,000.
        public var recordLimit: Int?
        /// Whether a missing `apns-push-type` is 400 InvalidPushType (default true) or means `alert`.
        public var requirePushType: Bool?
        /// Seconds added to the mock's clock for every time rule (token age, 20-minute refresh, 410 timestamps),
        /// to follow a client's injected clock instead of waiting. Default 0.
        public var clockOffsetSeconds: Double?
        /// Seconds without any frame from the client (PING included) after which a connection gets GOAWAY
        /// `{"reason":"IdleTimeout"}` and is closed, as APNs closes idle connections. Default 0: never.
        public var idleTimeoutSeconds: Double?
        /// A uniformly random extra delay of 0…N ms per answer on top of `delayMs`. Default 0.
        public var delayJitterMs: Int?
        /// After this many answers on a connection: GOAWAY `{"reason":"Shutdown"}` whose last-stream-id is the
        /// highest stream received, those streams still answered, later ones refused, then close. Default 0: never.
        public var goawayAfter: Int?
        /// After this many answers on a connection: answer nothing more and abort the TCP connection 50 ms later
        /// with the requests in flight unanswered. Default 0: never.
        public var dropAfter: Int?
        /// Where the 20-minute provider-token refresh floor applies. Default `.connection`.
        public var tokenFloorScope: TokenFloorScope?
        /// Seconds a gracefully closing connection (after GOAWAY) keeps reading before closing its socket, so no
        /// answer already written is lost to a TCP reset. 0 closes at once (answers written just before may be
        /// lost, as with a careless server). Default 1.
        public var lingerSeconds: Double?

        public init(delayMs: Int? = nil, maxStreams: Int? = nil, record: Bool? = nil, recordLimit: Int? = nil,
                    requirePushType: Bool? = nil, clockOffsetSeconds: Double? = nil,
                    idleTimeoutSeconds: Double? = nil, delayJitterMs: Int? = nil, goawayAfter: Int? = nil,
                    dropAfter: Int? = nil, tokenFloorScope: TokenFloorScope? = nil, lingerSeconds: Double? = nil) {
            self.delayMs = delayMs
            self.maxStreams = maxStreams
            self.record = record
            self.recordLimit = recordLimit
            self.requirePushType = requirePushType
            self.clockOffsetSeconds = clockOffsetSeconds
            self.idleTimeoutSeconds = idleTimeoutSeconds
            self.delayJitterMs = delayJitterMs
            self.goawayAfter = goawayAfter
            self.dropAfter = dropAfter
            self.tokenFloorScope = tokenFloorScope
            self.lingerSeconds = lingerSeconds
        }

        /// The control API's JSON: the fields set, under the mock's names.
        var json: JSONValue {
            var object: [String: JSONValue] = [:]
            object["delay_ms"] = delayMs.map(JSONValue.int)
            object["max_streams"] = maxStreams.map(JSONValue.int)
            object["record"] = record.map(JSONValue.bool)
            object["record_limit"] = recordLimit.map(JSONValue.int)
            object["require_push_type"] = requirePushType.map(JSONValue.bool)
            object["clock_offset_s"] = clockOffsetSeconds.map(JSONValue.double)
            object["idle_timeout_s"] = idleTimeoutSeconds.map(JSONValue.double)
            object["delay_jitter_ms"] = delayJitterMs.map(JSONValue.int)
            object["goaway_after"] = goawayAfter.map(JSONValue.int)
            object["drop_after"] = dropAfter.map(JSONValue.int)
            object["token_floor_scope"] = tokenFloorScope.map { .string($0.rawValue) }
            object["linger_s"] = lingerSeconds.map(JSONValue.double)
            return .object(object)
        }

        /// Reads the configuration the control API answers.
        init(json: JSONValue) throws(MockJSONError) {
            let c = try MockJSONObject(json)
            self.init(delayMs: try c.optionalInt("delay_ms"), maxStreams: try c.optionalInt("max_streams"),
                      record: try c.optionalBool("record"), recordLimit: try c.optionalInt("record_limit"),
                      requirePushType: try c.optionalBool("require_push_type"),
                      clockOffsetSeconds: try c.optionalDouble("clock_offset_s"),
                      idleTimeoutSeconds: try c.optionalDouble("idle_timeout_s"),
                      delayJitterMs: try c.optionalInt("delay_jitter_ms"), goawayAfter: try c.optionalInt("goaway_after"),
                      dropAfter: try c.optionalInt("drop_after"),
                      tokenFloorScope: try c.optionalString("token_floor_scope").map { (raw) throws(MockJSONError) in
                          guard let scope = TokenFloorScope(rawValue: raw) else { throw MockJSONError("token_floor_scope", "unknown \(raw)") }
                          return scope
                      },
                      lingerSeconds: try c.optionalDouble("linger_s"))
        }
    }

    /// Where the mock applies Apple's 20-minute provider-token refresh floor.
    public enum TokenFloorScope: String, Sendable {
        /// Per connection, as Apple documents it.
        case connection
        /// Per signing key across every connection for the mock's lifetime (client restarts included), as APNs
        /// has been observed to enforce it: a new token less than 20 minutes (by `iat`) after the newest accepted
        /// one is `429 TooManyProviderTokenUpdates`; a token accepted before stays valid.
        case key
    }

    /// One request as the mock received and answered it.
    public struct Request: Sendable {
        /// Increasing sequence number (across connections), starting at 1 after each `reset()`.
        public var seq: Int
        /// Seconds since the epoch when the request was complete.
        public var time: Double
        /// The connection's id (1, 2, … in accept order).
        public var connection: Int
        public var stream: Int
        public var method: String
        public var path: String
        /// The device token from the path (nil when the path had none).
        public var token: String?
        /// Header names (lower-case) to values; a repeated header has several values.
        public var headers: [String: [String]]
        /// The body parsed as JSON (nil when it is empty or not JSON), whatever the answer.
        public var payload: JSONValue?
        public var payloadSize: Int
        /// The status and reason answered (or to be answered after a delay; `.drop` records the status too).
        public var status: Int
        public var reason: String?
        /// The 410 `timestamp` answered, if any.
        public var timestamp: Int64?
        /// The `apns-id` answered: the request's own or one the mock generated.
        public var apnsID: String
        public var action: Action
        /// The provider token's key ID, issuer and issued-at (nil unless its signature verified).
        public var jwt: ProviderToken?

        /// The first value of a header, or nil.
        public func header(_ name: String) -> String? { headers[name.lowercased()]?.first }

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
            guard let action = Action(rawValue: try c.string("action")) else { throw MockJSONError("action", "unknown") }
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
    public struct ProviderToken: Sendable, Equatable {
        public var kid: String
        public var iss: String
        public var iat: Double
    }

    /// Counters since start-up or the last `reset()`.
    public struct Stats: Sendable {
        public var requests: Int
        /// Status code (as a string, e.g. "200") to count.
        public var byStatus: [String: Int]
        public var byReason: [String: Int]
        public var connectionsOpened: Int
        public var connectionsOpen: Int
        /// Streams refused with RST_STREAM REFUSED_STREAM (over the advertised limit, or after GOAWAY).
        public var refusedStreams: Int
        public var goawaysSent: Int
        public var connectionsDropped: Int
        /// Requests decided but never answered: dropped, above a GOAWAY's last-stream-id, reset by the client, or
        /// their connection closed before the delayed answer.
        public var unanswered: Int
        /// The most streams any connection had in flight at once.
        public var maxConcurrentStreamsObserved: Int
        /// The connections open now.
        public var connections: [Connection]
        /// Device token to (status → count) of the answers decided; empty when fetched with
        /// `stats(includeTokens: false)`. Includes answers never sent (see `sentPerToken`).
        public var perToken: [String: [String: Int]]
        /// Device token to (status → count) of the answers actually written to a connection.
        public var sentPerToken: [String: [String: Int]]

        /// How many requests were answered with `status`.
        public func count(status: Int) -> Int { byStatus[String(status)] ?? 0 }

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
    public struct Connection: Sendable {
        public var id: Int
        public var requests: Int
        /// Distinct provider tokens accepted on this connection.
        public var tokensSeen: Int
        /// The key ID bound on the first valid push (nil before it).
        public var boundKid: String?
        public var advertisedMaxStreams: Int
        public var maxConcurrentStreamsObserved: Int
        public var inFlight: Int

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
