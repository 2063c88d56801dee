import Foundation

extension MockAPNs {
    /// The environment the mock pretends to be. Only `sandbox` answers `apns-unique-id` (as Apple's does).
    public enum Environment: String, Sendable {
        case sandbox
        case production
    }

    /// What the mock does after deciding a scripted answer (see `Behaviour`).
    public enum Action: String, Sendable, Codable {
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
    public struct Behaviour: Sendable, Encodable, Equatable {
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

        enum CodingKeys: String, CodingKey {
            case status, reason, timestamp, times, action
            case delayMs = "delay_ms"
            case goawayError = "goaway_error"
        }
    }

    /// Run-time switches for `setConfig`; nil fields are left unchanged.
    public struct Config: Sendable, Codable, Equatable {
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

        enum CodingKeys: String, CodingKey {
            case record
            case delayMs = "delay_ms"
            case maxStreams = "max_streams"
            case recordLimit = "record_limit"
            case requirePushType = "require_push_type"
            case clockOffsetSeconds = "clock_offset_s"
            case idleTimeoutSeconds = "idle_timeout_s"
            case delayJitterMs = "delay_jitter_ms"
            case goawayAfter = "goaway_after"
            case dropAfter = "drop_after"
            case tokenFloorScope = "token_floor_scope"
            case lingerSeconds = "linger_s"
        }
    }

    /// Where the mock applies Apple's 20-minute provider-token refresh floor.
    public enum TokenFloorScope: String, Sendable, Codable {
        /// Per connection, as Apple documents it.
        case connection
        /// Per signing key across every connection for the mock's lifetime (client restarts included), as APNs
        /// has been observed to enforce it: a new token less than 20 minutes (by `iat`) after the newest accepted
        /// one is `429 TooManyProviderTokenUpdates`; a token accepted before stays valid.
        case key
    }

    /// One request as the mock received and answered it.
    public struct Request: Sendable, Decodable {
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

        enum CodingKeys: String, CodingKey {
            case seq, time, connection, stream, method, path, token, headers, payload, status, reason, timestamp
            case action, jwt
            case payloadSize = "payload_size"
            case apnsID = "apns_id"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            seq = try c.decode(Int.self, forKey: .seq)
            time = try c.decode(Double.self, forKey: .time)
            connection = try c.decode(Int.self, forKey: .connection)
            stream = try c.decode(Int.self, forKey: .stream)
            method = try c.decode(String.self, forKey: .method)
            path = try c.decode(String.self, forKey: .path)
            token = try c.decodeIfPresent(String.self, forKey: .token)
            payload = try c.decodeIfPresent(JSONValue.self, forKey: .payload)
            payloadSize = try c.decode(Int.self, forKey: .payloadSize)
            status = try c.decode(Int.self, forKey: .status)
            reason = try c.decodeIfPresent(String.self, forKey: .reason)
            timestamp = try c.decodeIfPresent(Int64.self, forKey: .timestamp)
            apnsID = try c.decode(String.self, forKey: .apnsID)
            action = try c.decode(Action.self, forKey: .action)
            jwt = try c.decodeIfPresent(ProviderToken.self, forKey: .jwt)
            // The mock writes a single value as a string and a repeated header as a list.
            let raw = try c.decode([String: JSONValue].self, forKey: .headers)
            headers = raw.mapValues { value in
                switch value {
                case .string(let s): return [s]
                case .array(let items): return items.compactMap { if case .string(let s) = $0 { s } else { nil } }
                default: return []
                }
            }
        }
    }

    /// The verified claims of a provider token.
    public struct ProviderToken: Sendable, Decodable, Equatable {
        public var kid: String
        public var iss: String
        public var iat: Double
    }

    /// Counters since start-up or the last `reset()`.
    public struct Stats: Sendable, Decodable {
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

        enum CodingKeys: String, CodingKey {
            case requests, connections
            case byStatus = "by_status"
            case byReason = "by_reason"
            case connectionsOpened = "connections_opened"
            case connectionsOpen = "connections_open"
            case refusedStreams = "refused_streams"
            case goawaysSent = "goaways_sent"
            case connectionsDropped = "connections_dropped"
            case unanswered
            case maxConcurrentStreamsObserved = "max_concurrent_streams_observed"
            case perToken = "per_token"
            case sentPerToken = "sent_per_token"
        }

        public init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: CodingKeys.self)
            requests = try c.decode(Int.self, forKey: .requests)
            byStatus = try c.decode([String: Int].self, forKey: .byStatus)
            byReason = try c.decode([String: Int].self, forKey: .byReason)
            connectionsOpened = try c.decode(Int.self, forKey: .connectionsOpened)
            connectionsOpen = try c.decode(Int.self, forKey: .connectionsOpen)
            refusedStreams = try c.decode(Int.self, forKey: .refusedStreams)
            goawaysSent = try c.decode(Int.self, forKey: .goawaysSent)
            connectionsDropped = try c.decode(Int.self, forKey: .connectionsDropped)
            unanswered = try c.decode(Int.self, forKey: .unanswered)
            maxConcurrentStreamsObserved = try c.decode(Int.self, forKey: .maxConcurrentStreamsObserved)
            connections = try c.decode([Connection].self, forKey: .connections)
            perToken = try c.decodeIfPresent([String: [String: Int]].self, forKey: .perToken) ?? [:]
            sentPerToken = try c.decodeIfPresent([String: [String: Int]].self, forKey: .sentPerToken) ?? [:]
        }
    }

    /// One open connection as the mock sees it.
    public struct Connection: Sendable, Decodable {
        public var id: Int
        public var requests: Int
        /// Distinct provider tokens accepted on this connection.
        public var tokensSeen: Int
        /// The key ID bound on the first valid push (nil before it).
        public var boundKid: String?
        public var advertisedMaxStreams: Int
        public var maxConcurrentStreamsObserved: Int
        public var inFlight: Int

        enum CodingKeys: String, CodingKey {
            case id, requests
            case tokensSeen = "tokens_seen"
            case boundKid = "bound_kid"
            case advertisedMaxStreams = "advertised_max_streams"
            case maxConcurrentStreamsObserved = "max_concurrent_streams_observed"
            case inFlight = "in_flight"
        }
    }
}

/// Any JSON value, for payloads recorded by the mock.
public enum JSONValue: Sendable, Equatable, Decodable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONValue].self))
        }
    }

    /// The member `key` of an object (nil for other values), so tests can write `payload?["aps"]?["alert"]`.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }
}
