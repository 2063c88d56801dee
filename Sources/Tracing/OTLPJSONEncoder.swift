import JSON

/// Writes spans as an OTLP/HTTP JSON `ExportTraceServiceRequest` (the OTLP specification's JSON mapping): ids as
/// lower-case hex (not base64), enums as numbers, 64-bit integers (`…UnixNano`, `intValue`) as decimal strings,
/// lowerCamelCase keys, one `resourceSpans` entry with the process's resource and one scope.
package struct OTLPJSONEncoder: Sendable {
    /// The process's resource attributes (`service.name`, `service.instance.id`, …).
    package var resource: [Attribute]
    /// The instrumentation scope: this server's name and version.
    package var scopeName: String
    package var scopeVersion: String

    package init(resource: [Attribute], scopeName: String, scopeVersion: String) {
        self.resource = resource
        self.scopeName = scopeName
        self.scopeVersion = scopeVersion
    }

    /// The request body for `spans`.
    package func encode(_ spans: [SpanData]) -> [UInt8] {
        let scope: JSONValue = ["name": .string(scopeName), "version": .string(scopeVersion)]
        let body: JSONValue = [
            "resourceSpans": [
                [
                    "resource": ["attributes": Self.attributes(resource)],
                    "scopeSpans": [["scope": scope, "spans": .array(spans.map(Self.span))]],
                ]
            ]
        ]
        return body.serialized()
    }

    static func span(_ span: SpanData) -> JSONValue {
        // Bits 0-7: the W3C flags; bit 8: whether the parent is remote is known; bit 9: it is.
        var flags = Int(span.context.flags) | 0x100
        if span.parentIsRemote { flags |= 0x200 }
        var object: [String: JSONValue] = [
            "traceId": .string(span.context.traceID.hex),
            "spanId": .string(span.context.spanID.hex),
            "flags": .int(flags),
            "name": .string(span.name),
            "kind": .int(span.kind.rawValue),
            "startTimeUnixNano": .string(String(span.startTimeUnixNano)),
            "endTimeUnixNano": .string(String(max(span.endTimeUnixNano, span.startTimeUnixNano))),
            "attributes": attributes(span.attributes),
            "status": status(span),
        ]
        if let parent = span.parentSpanID { object["parentSpanId"] = .string(parent.hex) }
        if !span.context.traceState.isEmpty { object["traceState"] = .string(span.context.traceState) }
        if !span.events.isEmpty {
            object["events"] = .array(
                span.events.map { event in
                    [
                        "name": .string(event.name), "timeUnixNano": .string(String(event.timeUnixNano)),
                        "attributes": attributes(event.attributes),
                    ]
                })
        }
        if span.droppedAttributes > 0 { object["droppedAttributesCount"] = .int(span.droppedAttributes) }
        if span.droppedEvents > 0 { object["droppedEventsCount"] = .int(span.droppedEvents) }
        return .object(object)
    }

    private static func status(_ span: SpanData) -> JSONValue {
        var status: [String: JSONValue] = ["code": .int(span.statusCode.rawValue)]
        if !span.statusMessage.isEmpty { status["message"] = .string(span.statusMessage) }
        return .object(status)
    }

    static func attributes(_ attributes: [Attribute]) -> JSONValue {
        .array(attributes.map { ["key": .string($0.key), "value": value($0.value)] })
    }

    static func value(_ value: AttributeValue) -> JSONValue {
        switch value {
        case .string(let text): ["stringValue": .string(text)]
        case .bool(let flag): ["boolValue": .bool(flag)]
        case .int(let number): ["intValue": .string(String(number))]
        // JSON has no NaN or infinity; OTLP's JSON mapping writes them as strings.
        case .double(let number):
            [
                "doubleValue": number.isFinite
                    ? .double(number) : .string(number.isNaN ? "NaN" : number > 0 ? "Infinity" : "-Infinity")
            ]
        }
    }
}
