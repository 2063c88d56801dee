/// The part of a span that crosses process boundaries (W3C Trace Context): trace id, span id, flags and the vendors'
/// `tracestate`. Carried in `traceparent`/`tracestate` headers, stored with a publish job so that the node that
/// claims it continues the trace, and held in `TraceContext.current` while a task works for a span.
package struct TraceContext: Hashable, Sendable {
    package var traceID: TraceID
    package var spanID: SpanID
    /// W3C trace flags: bit 0 sampled, bit 1 random trace id (level 2); the other bits are sent as 0.
    package var flags: UInt8
    /// The `tracestate` list as received (validated, at most 32 members and 512 characters), or "".
    package var traceState: String
    /// Came from another process (a header, a stored job), not from a span of this one.
    package var isRemote: Bool

    package init(traceID: TraceID, spanID: SpanID, flags: UInt8, traceState: String = "", isRemote: Bool = false) {
        self.traceID = traceID
        self.spanID = spanID
        self.flags = flags
        self.traceState = traceState
        self.isRemote = isRemote
    }

    package var isSampled: Bool { flags & TraceFlags.sampled != 0 }

    /// The context of the span a task is working for right now, if any: what a child span, an outgoing
    /// `traceparent` or a stored job takes as its parent.
    @TaskLocal package static var current: TraceContext?

    /// Parses a `traceparent` header (W3C Trace Context §3.2) and its `tracestate`. nil, with the `tracestate`
    /// ignored too, for anything malformed: wrong lengths or separators, upper-case or non-hex digits, version
    /// `ff`, an all-zero trace or parent id, version 00 with trailing data. A higher version is read by its
    /// version-00 prefix, as the specification asks, when what follows it starts with `-`.
    package init?(traceparent: String, tracestate: String? = nil) {
        let b = Array(traceparent.utf8.prefix(512))
        guard b.count >= 55, b[2] == UInt8(ascii: "-"), b[35] == UInt8(ascii: "-"), b[52] == UInt8(ascii: "-"),
            b[0..<55].enumerated().allSatisfy({ index, byte in [2, 35, 52].contains(index) || Self.isLowerHex(byte) }),
            let version = Hex.uint64(b[0..<2]), version != 0xFF,
            let traceID = TraceID(hex: String(decoding: b[3..<35], as: UTF8.self)),
            let spanID = SpanID(hex: String(decoding: b[36..<52], as: UTF8.self)),
            let flags = Hex.uint64(b[53..<55])
        else { return nil }
        if version == 0 {
            guard b.count == 55 else { return nil }
        } else if b.count > 55, b[55] != UInt8(ascii: "-") {
            return nil
        }
        self.init(
            traceID: traceID, spanID: spanID, flags: UInt8(flags) & (TraceFlags.sampled | TraceFlags.randomTraceID),
            traceState: tracestate.flatMap(TraceState.normalized) ?? "", isRemote: true)
    }

    /// `00-<trace id>-<span id>-<flags>`, lower-case: the header for an outgoing request made within this span.
    package var traceparent: String { "00-\(traceID.hex)-\(spanID.hex)-\(Hex.byte(flags))" }

    private static func isLowerHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }
}

/// The W3C trace flags this implementation knows.
package enum TraceFlags {
    package static let sampled: UInt8 = 0x01
    /// Level 2: the trace id's low 7 bytes are random. Kept as received when continuing a trace.
    package static let randomTraceID: UInt8 = 0x02
}

/// `tracestate` (W3C Trace Context §3.3): a list of up to 32 `key=value` members.
package enum TraceState {
    /// Most members a list may hold; a longer one is invalid and ignored.
    package static let maxMembers = 32
    /// Characters propagated at least; a longer list loses whole members, those over 128 characters first.
    package static let maxLength = 512

    /// The list with empty members removed and spaces around members trimmed, cut to `maxLength`; nil when a
    /// member is malformed or there are too many (the header is then ignored, as the specification asks).
    package static func normalized(_ header: String) -> String? {
        var members: [Substring] = []
        for raw in header.split(separator: ",", omittingEmptySubsequences: false) {
            let member = raw.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }
            let text = Substring(String(member.reversed()))
            if text.isEmpty { continue }
            guard isValidMember(text) else { return nil }
            members.append(text)
        }
        guard members.count <= maxMembers else { return nil }
        var length = members.reduce(0) { $0 + $1.utf8.count } + max(0, members.count - 1)
        while length > maxLength {
            let index = members.lastIndex { $0.utf8.count > 128 } ?? members.count - 1
            length -= members[index].utf8.count + (members.count > 1 ? 1 : 0)
            members.remove(at: index)
        }
        return members.joined(separator: ",")
    }

    private static func isValidMember(_ member: Substring) -> Bool {
        guard let equals = member.firstIndex(of: "=") else { return false }
        let key = member[..<equals].utf8
        let value = member[member.index(after: equals)...].utf8
        guard (1...256).contains(key.count), (1...256).contains(value.count), value.last != 0x20 else { return false }
        let keyOK = key.allSatisfy { byte in
            (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte)
                || [UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "*"), UInt8(ascii: "/"), UInt8(ascii: "@")]
                    .contains(byte)
        }
        let valueOK = value.allSatisfy {
            (0x20...0x7E).contains($0) && $0 != UInt8(ascii: ",") && $0 != UInt8(ascii: "=")
        }
        return keyOK && valueOK
    }
}
