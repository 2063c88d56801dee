/// What a span does, as OTLP numbers it (`SpanKind` in trace.proto; JSON carries the number, never the name).
public enum SpanKind: Int, Sendable {
    case `internal` = 1
    case server = 2
    case client = 3
    case producer = 4
    case consumer = 5
}

/// How a span ended (`Status.StatusCode`: 0 unset, 1 ok, 2 error).
public enum SpanStatusCode: Int, Sendable {
    case unset = 0
    case ok = 1
    case error = 2
}

/// An attribute's value: the scalar kinds OTLP's `AnyValue` has and this server uses.
public enum AttributeValue: Sendable, Equatable {
    case string(String)
    case bool(Bool)
    case int(Int)
    case double(Double)
}

/// One attribute, in the order it was set.
public struct Attribute: Sendable, Equatable {
    public var key: String
    public var value: AttributeValue

    public init(_ key: String, _ value: AttributeValue) {
        self.key = key
        self.value = value
    }

    public init(_ key: String, _ value: String) { self.init(key, .string(value)) }
    public init(_ key: String, _ value: Int) { self.init(key, .int(value)) }
    public init(_ key: String, _ value: Bool) { self.init(key, .bool(value)) }
}

/// A point in a span's life with a name and attributes (`Span.Event`).
public struct SpanEvent: Sendable, Equatable {
    public var name: String
    public var timeUnixNano: UInt64
    public var attributes: [Attribute]

    public init(name: String, timeUnixNano: UInt64, attributes: [Attribute] = []) {
        self.name = name
        self.timeUnixNano = timeUnixNano
        self.attributes = attributes
    }
}

/// A finished, sampled span as it is queued for export: immutable, everything the OTLP encoder needs.
public struct SpanData: Sendable, Equatable {
    public var context: TraceContext
    /// nil for a root span.
    public var parentSpanID: SpanID?
    /// The parent came from another process (OTLP `flags` bit 9).
    public var parentIsRemote: Bool
    public var name: String
    public var kind: SpanKind
    public var startTimeUnixNano: UInt64
    public var endTimeUnixNano: UInt64
    public var attributes: [Attribute]
    public var events: [SpanEvent]
    public var statusCode: SpanStatusCode
    public var statusMessage: String
    /// Attributes and events refused past the limits (`SpanLimits`).
    public var droppedAttributes: Int
    public var droppedEvents: Int

    public init(
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
public enum SpanLimits {
    public static let attributes = 128
    public static let events = 128
}
