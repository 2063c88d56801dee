import JSON

extension MockAPNs {
    /// The environment the mock pretends to be. Only `sandbox` answers `apns-unique-id` (as Apple's does).
    package enum Environment: String, Sendable {
        case sandbox
        case production
    }

    /// What the mock does after deciding a scripted answer (see `Behaviour`).
    package enum Action: String, Sendable {
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
    package struct Behaviour: Sendable, Equatable {
        /// HTTP status to answer. Default 200.
        package var status: Int
        /// Apple's `reason`; required for any status other than 200.
        package var reason: String?
        /// Milliseconds since the epoch for a 410 answer; the mock uses "now" when nil.
        package var timestamp: Int64?
        /// Applies to the first `times` matching requests, then the token answers normally; nil: always.
        package var times: Int?
        /// Delay before the answer, in milliseconds (added to the global `Config.delayMs`).
        package var delayMs: Int
        /// What to do besides answering. Default `.answer`.
        package var action: Action
        /// The HTTP/2 error code of the GOAWAY for `.goaway`/`.goawayUnanswered`. Default 0 (NO_ERROR).
        package var goawayError: Int

        package init(
            status: Int = 200, reason: String? = nil, timestamp: Int64? = nil, times: Int? = nil,
            delayMs: Int = 0, action: Action = .answer, goawayError: Int = 0
        ) {
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
    package struct Config: Sendable, Equatable {
        /// Delay added to every answer, in milliseconds (a "slow APNs"). Start-up default 0.
        package var delayMs: Int?
        /// SETTINGS_MAX_CONCURRENT_STREAMS after the first valid token; changing it re-advertises the value to
        /// authenticated connections at once. Start-up default: `start(maxStreams:)`.
        package var maxStreams: Int?
        /// Whether `requests()` records each request. Off, only the per-token counts of `stats()` are kept
        /// (for 100k-request runs). Default true.
        package var record: Bool?
        /// How many recent requests are kept. Default 10,000.
        package var recordLimit: Int?
        /// Whether a missing `apns-push-type` is 400 InvalidPushType (default true) or means `alert`.
        package var requirePushType: Bool?
        /// Seconds added to the mock's clock for every time rule (token age, 20-minute refresh, 410 timestamps),
        /// to follow a client's injected clock instead of waiting. Default 0.
        package var clockOffsetSeconds: Double?
        /// Seconds without any frame from the client (PING included) after which a connection gets GOAWAY
        /// `{"reason":"IdleTimeout"}` and is closed, as APNs closes idle connections. Default 0: never.
        package var idleTimeoutSeconds: Double?
        /// A uniformly random extra delay of 0…N ms per answer on top of `delayMs`. Default 0.
        package var delayJitterMs: Int?
        /// After this many answers on a connection: GOAWAY `{"reason":"Shutdown"}` whose last-stream-id is the
        /// highest stream received, those streams still answered, later ones refused, then close. Default 0: never.
        package var goawayAfter: Int?
        /// After this many answers on a connection: answer nothing more and abort the TCP connection 50 ms later
        /// with the requests in flight unanswered. Default 0: never.
        package var dropAfter: Int?
        /// Where the 20-minute provider-token refresh floor applies. Default `.connection`.
        package var tokenFloorScope: TokenFloorScope?
        /// Seconds a gracefully closing connection (after GOAWAY) keeps reading before closing its socket, so no
        /// answer already written is lost to a TCP reset. 0 closes at once (answers written just before may be
        /// lost, as with a careless server). Default 1.
        package var lingerSeconds: Double?
        /// Apple's order on a new token-auth connection: one stream until the first answer to an authenticated
        /// request is written, then the SETTINGS frame raising the limit to `maxStreams` right behind that answer.
        /// Default false: the raise goes out as soon as the first token is verified, before its answer.
        package var raiseStreamsAfterAnswer: Bool?

        package init(
            delayMs: Int? = nil, maxStreams: Int? = nil, record: Bool? = nil, recordLimit: Int? = nil,
            requirePushType: Bool? = nil, clockOffsetSeconds: Double? = nil,
            idleTimeoutSeconds: Double? = nil, delayJitterMs: Int? = nil, goawayAfter: Int? = nil,
            dropAfter: Int? = nil, tokenFloorScope: TokenFloorScope? = nil, lingerSeconds: Double? = nil,
            raiseStreamsAfterAnswer: Bool? = nil
        ) {
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
            self.raiseStreamsAfterAnswer = raiseStreamsAfterAnswer
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
            object["raise_streams_after_answer"] = raiseStreamsAfterAnswer.map(JSONValue.bool)
            return .object(object)
        }

        /// Reads the configuration the control API answers.
        init(json: JSONValue) throws(MockJSONError) {
            let c = try MockJSONObject(json)
            self.init(
                delayMs: try c.optionalInt("delay_ms"), maxStreams: try c.optionalInt("max_streams"),
                record: try c.optionalBool("record"), recordLimit: try c.optionalInt("record_limit"),
                requirePushType: try c.optionalBool("require_push_type"),
                clockOffsetSeconds: try c.optionalDouble("clock_offset_s"),
                idleTimeoutSeconds: try c.optionalDouble("idle_timeout_s"),
                delayJitterMs: try c.optionalInt("delay_jitter_ms"), goawayAfter: try c.optionalInt("goaway_after"),
                dropAfter: try c.optionalInt("drop_after"),
                tokenFloorScope: try c.optionalString("token_floor_scope").map { (raw) throws(MockJSONError) in
                    guard let scope = TokenFloorScope(rawValue: raw) else {
                        throw MockJSONError("token_floor_scope", "unknown \(raw)")
                    }
                    return scope
                },
                lingerSeconds: try c.optionalDouble("linger_s"),
                raiseStreamsAfterAnswer: try c.optionalBool("raise_streams_after_answer"))
        }
    }

    /// Where the mock applies Apple's 20-minute provider-token refresh floor.
    package enum TokenFloorScope: String, Sendable {
        /// Per connection, as Apple documents it.
        case connection
        /// Per signing key across every connection for the mock's lifetime (client restarts included), as APNs
        /// has been observed to enforce it: a new token less than 20 minutes (by `iat`) after the newest accepted
        /// one is `429 TooManyProviderTokenUpdates`; a token accepted before stays valid.
        case key
    }
}
