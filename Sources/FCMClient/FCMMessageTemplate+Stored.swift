import JSON

extension FCMMessageTemplate {
    /// A template rebuilt from its stored `message` (a queued publish's plan, written after `init(section:…)`
    /// validated and mapped it). The members are not checked again: the store holds only what the server wrote.
    package init(storedMessage: [String: JSONValue], validateOnly: Bool) {
        message = storedMessage
        self.validateOnly = validateOnly
        messageBytes = JSONValue.object(storedMessage).serialized()
        bodyParts = Self.bodyParts(messageBytes: messageBytes, validateOnly: validateOnly)
    }
}
