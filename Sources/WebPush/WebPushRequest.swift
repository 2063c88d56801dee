import JWTSigner

/// One Web Push request (RFC 8030 §5), ready for any HTTP client: POST `body` to `url` with `headers`.
package struct WebPushRequest: Sendable, Equatable {
    /// The subscription's endpoint.
    package let url: String
    /// `TTL`, `Content-Encoding`, `Content-Type`, `Authorization`, then `Urgency` and `Topic` when set.
    package let headers: [WebPushHeader]
    /// The `aes128gcm` body.
    package let body: [UInt8]

    /// Encrypts `message` for `subscription` and assembles the request.
    ///
    /// - Parameters:
    ///   - authorization: the VAPID header for `subscription.audience`.
    ///   - paddingLength, senderKey, salt: see `WebPushEncryption.encrypt`.
    package init(
        subscription: WebPushSubscription, message: WebPushMessage, authorization: VAPIDAuthorization,
        paddingLength: Int = 0, senderKey: P256KeyPair? = nil, salt: [UInt8]? = nil
    )
        throws(WebPushEncryptionError)
    {
        let encrypted = try WebPushEncryption.encrypt(
            message.payload, for: subscription.keys, paddingLength: paddingLength,
            senderKey: senderKey, salt: salt)
        self.url = subscription.endpoint.text
        self.headers = Self.headers(message: message, authorization: authorization, encoding: encrypted.headers)
        self.body = encrypted.body
    }

    /// The headers of every request with this message and authorization, in the order `headers` documents; they do
    /// not depend on the subscription, so a sender can build them once for many.
    package static func headers(
        message: WebPushMessage, authorization: VAPIDAuthorization,
        encoding: [WebPushHeader] = WebPushEncryption.contentEncodingHeaders
    ) -> [WebPushHeader] {
        var headers = [WebPushHeader(name: "TTL", value: String(message.ttl))]
        headers += encoding
        headers.append(WebPushHeader(name: "Content-Type", value: "application/octet-stream"))
        headers.append(authorization.header)
        if let urgency = message.urgency { headers.append(WebPushHeader(name: "Urgency", value: urgency.rawValue)) }
        if let topic = message.topic { headers.append(WebPushHeader(name: "Topic", value: topic)) }
        return headers
    }

    /// Encrypts `message` and takes the VAPID header from `vapid` (cached per origin).
    package init(subscription: WebPushSubscription, message: WebPushMessage, vapid: VAPIDAuthorizer)
        throws(WebPushEncryptionError)
    {
        let authorization: VAPIDAuthorization
        do throws(CryptoError) {
            authorization = try vapid.authorization(audience: subscription.audience)
        } catch {
            throw .crypto(error)
        }
        try self.init(subscription: subscription, message: message, authorization: authorization)
    }
}
