/// What a span does, as OTLP numbers it (`SpanKind` in trace.proto; JSON carries the number, never the name).
package enum SpanKind: Int, Sendable {
    case `internal` = 1
    case server = 2
    case client = 3
    case producer = 4
    case consumer = 5
}

/// How a span ended (`Status.StatusCode`: 0 unset, 1 ok, 2 error).
package enum SpanStatusCode: Int, Sendable {
    case unset = 0
    case ok = 1
    case error = 2
}

/// An attribute's value: the scalar kinds OTLP's `AnyValue` has and this server uses.
package enum AttributeValue: Sendable, Equatable {
    case string(String)
    case bool(Bool)
    case int(Int)
    case double(Double)
}

/// One attribute, in the order it was set.
package struct Attribute: Sendable, Equatable {
    package var key: String
    package var value: AttributeValue

    package init(_ key: String, _ value: AttributeValue) {
        self.key = key
        self.value = value
    }

    package init(_ key: String, _ value: String) { self.init(key, .string(value)) }
    package init(_ key: String, _ value: Int) { self.init(key, .int(value)) }
    package init(_ key: String, _ value: Bool) { self.init(key, .bool(value)) }
}

/// A point in a span's life with a name and attributes (`Span.Event`).
package struct SpanEvent: Sendable, Equatable {
    package var name: String
    package var timeUnixNano: UInt64
    package var attributes: [Attribute]

    package init(name: String, timeUnixNano: UInt64, attributes: [Attribute] = []) {
        self.name = name
        self.timeUnixNano = timeUnixNano
        self.attributes = attributes
    }
}

/// A finished, sampled span as it is queued for export: immutable, everything the OTLP encoder needs.
package struct SpanData: Sendable, Equatable {
    package var context: TraceContext
    /// nil for a root span.
    package var parentSpanID: SpanID?
    /// The parent came from another process (OTLP `flags` bit 9).
    package var parentIsRemote: Bool
    package var name: String
    package var kind: SpanKind
    package var startTimeUnixNano: UInt64
    package var endTimeUnixNano: UInt64
    package var attributes: [Attribute]
    package var events: [SpanEvent]
    package var statusCode: SpanStatusCode
    package var statusMessage: String
    /// Attributes and events refused past the limits (`SpanLimits`).
    package var droppedAttributes: Int
    package var droppedEvents: Int

    package init(
        context: TraceContext, parentSpanID: SpanID?, parentIsRemote: Bool = false, name: String, kind: SpanKind,
        startTimeUnixNano: UInt64, endTimeUnixNano: UInt64, attributes: [Attribute] = [],
        events: [SpanEvent] = [], statusCode: SpanStatusCode = .unset, statusMessage: String = "",
        droppedAttributes: Int = 0, droppedEvents: Int = 0
    ) {
        self.context = context
        self.parentSpanID = parentSpanID
        self.parentIsRemote = parentIsRemote
        self.name = name
        self.kind = kind
        self.startTimeUnixNano = startTimeUnixNano
        self.endTimeUnixNano = endTimeUnixNano
        self.attributes = attributes
        self.events = events
        self.statusCode = statusCode
        self.statusMessage = statusMessage
        self.droppedAttributes = droppedAttributes
        self.droppedEvents = droppedEvents
    }
}

/// The OpenTelemetry default limits per span (`OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT`, `…_EVENT_COUNT_LIMIT`): beyond
/// them a span counts what it dropped instead of growing.
package enum SpanLimits {
    package static let attributes = 128
    package static let events = 128
}
