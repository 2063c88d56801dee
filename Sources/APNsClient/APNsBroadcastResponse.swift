import JSON

/// What APNs answered to a channel management call or a broadcast send.
package struct APNsBroadcastResponse: Sendable, Equatable {
    /// The HTTP status (201 create, 200 read/list/send, 204 delete on success).
    package var status: Int
    /// The error body's `reason`; nil on success.
    package var reason: APNsReason?
    /// `apns-channel-id`: the new channel's id after a create (or the one the call named).
    package var channelID: String?
    /// `apns-request-id`: the one sent, or the one APNs generated.
    package var requestID: String?
    /// The JSON body on success (a read's channel configuration, a list's `{"channels":[…]}`); nil when empty or
    /// not JSON.
    package var body: JSONValue?

    package init(
        status: Int, reason: APNsReason? = nil, channelID: String? = nil, requestID: String? = nil,
        body: JSONValue? = nil
    ) {
        self.status = status
        self.reason = reason
        self.channelID = channelID
        self.requestID = requestID
        self.body = body
    }

    /// The response headers the client keeps.
    package static let headerNames = ["apns-channel-id", "apns-request-id"]

    /// Builds the response from the raw answer: an error body's `reason`, or a success body as JSON.
    package static func parse(status: Int, headers: [String: String], body: [UInt8]) -> APNsBroadcastResponse {
        var response = APNsBroadcastResponse(
            status: status, channelID: headers["apns-channel-id"],
            requestID: headers["apns-request-id"])
        if (200...299).contains(status) {
            response.body = body.isEmpty ? nil : JSONValue.parse(body)
        } else {
            response.reason = APNsResponse.parseBody(body).reason
        }
        return response
    }

    /// Whether APNs accepted the call (any 2xx).
    package var isSuccess: Bool { (200...299).contains(status) }

    /// A list's channel ids (`{"channels":[…]}`): the valid ones, in APNs' order; nil when the body has no list.
    package var channels: [APNsChannelID]? {
        guard let list = body?.objectValue?["channels"]?.arrayValue else { return nil }
        return list.compactMap { $0.stringValue.flatMap(APNsChannelID.init) }
    }

    /// A create's new channel id, when the header holds a valid one.
    package var createdChannel: APNsChannelID? { channelID.flatMap(APNsChannelID.init) }
}

/// The outcome of a channel call or a broadcast send: an answer, or why none arrived.
package enum APNsBroadcastResult: Sendable, Equatable {
    case response(APNsBroadcastResponse)
    case failure(APNsBroadcastFailure)
}

/// Why a channel call or broadcast got no usable answer.
package enum APNsBroadcastFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Refused locally; nothing was sent.
    case invalidRequest(APNsBroadcastViolation)
    /// No answer: the connection failed or timed out (`isRetryable`), or a fatal transport problem (TLS).
    case transport(APNsTransportError)
    /// The credentials are unusable (APNs rejected the token, or the key cannot sign).
    case configuration(APNsConfigurationFault)
    /// The client is shut down.
    case shutdown

    /// Whether sending again later may succeed (connection loss, timeout).
    package var isRetryable: Bool {
        if case .transport(let error) = self { return error.kind != .fatal }
        return false
    }

    package var description: String {
        switch self {
        case .invalidRequest(let violation): return "invalid_request(\(violation))"
        case .transport(let error): return "transport(\(error))"
        case .configuration(let fault): return "configuration(\(fault))"
        case .shutdown: return "shutdown"
        }
    }
}
