/// RFC 8030 §5.3 `Urgency`.
package enum WebPushUrgency: String, Sendable, CaseIterable {
    case veryLow = "very-low"
    case low
    case normal
    case high
}

/// Why a message was refused before encryption.
package enum WebPushMessageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Payload bytes over `WebPushMessage.maxPayloadSize`.
    case payloadTooLarge(size: Int, maxBytes: Int)
    /// `TTL` outside 0...`WebPushMessage.maxTTL`.
    case invalidTTL(Int)
    /// `Topic` empty, longer than 32 characters or outside the base64url alphabet (RFC 8030 §5.4).
    case invalidTopic

    package var description: String {
        switch self {
        case .payloadTooLarge(let size, let max): return "payload is \(size) bytes, at most \(max) fit one push message"
        case .invalidTTL(let ttl): return "TTL \(ttl) is outside 0...\(WebPushMessage.maxTTL) seconds"
        case .invalidTopic: return "topic must be 1-32 base64url characters"
        }
    }
}

/// What to deliver to one subscription: the plaintext payload and the RFC 8030 headers.
package struct WebPushMessage: Sendable, Equatable {
    /// Largest TTL, seconds: 4 weeks, the Beams `web.time_to_live` maximum (push services cap lower on their own).
    package static let maxTTL = 2_419_200
    /// Largest payload (RFC 8291 §4: the body must fit 4096 bytes).
    package static let maxPayloadSize = WebPushEncryption.maxPlaintextSize
    /// Longest `Topic` (RFC 8030 §5.4).
    package static let maxTopicLength = 32

    package let payload: [UInt8]
    /// Seconds the push service keeps the message for an offline browser (RFC 8030 §5.2; required).
    package let ttl: Int
    /// `nil`: no header (the push service assumes `normal`).
    package let urgency: WebPushUrgency?
    /// Replaces a pending message with the same topic.
    package let topic: String?

    package init(payload: [UInt8], ttl: Int, urgency: WebPushUrgency? = nil, topic: String? = nil)
        throws(WebPushMessageError)
    {
        guard payload.count <= Self.maxPayloadSize else {
            throw .payloadTooLarge(size: payload.count, maxBytes: Self.maxPayloadSize)
        }
        guard (0...Self.maxTTL).contains(ttl) else { throw .invalidTTL(ttl) }
        if let topic {
            let alphabet = { (byte: UInt8) in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_")
            }
            guard (1...Self.maxTopicLength).contains(topic.utf8.count), topic.utf8.allSatisfy(alphabet) else {
                throw .invalidTopic
            }
        }
        self.payload = payload
        self.ttl = ttl
        self.urgency = urgency
        self.topic = topic
    }
}
