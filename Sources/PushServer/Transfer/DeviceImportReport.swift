import JSON
import PushStore

/// What an import did (or, in a dry run, would do): counts per outcome and the refused lines with their line
/// number, reason and masked token (never the whole token).
package struct DeviceImportReport: Equatable {
    /// One refused line.
    package struct Refused: Equatable {
        /// 1-based, counting the header.
        package var line: Int
        package var reason: String
        /// `DeviceInvalidation.mask`; nil when the line had no readable token.
        package var maskedToken: String?
    }

    package var dryRun: Bool
    package var created = 0
    package var updated = 0
    package var unchanged = 0
    package var refused = 0
    /// The first `maxListed` refused lines; the rest are only counted, so a bad file cannot grow the report
    /// without bound.
    package var refusedLines: [Refused] = []
    /// The last line read.
    package var lines = 0

    package static let maxListed = 10_000

    package init(dryRun: Bool) { self.dryRun = dryRun }

    /// Records the outcome of the device on `line` (the masked token is kept for a refusal only).
    package mutating func record(_ outcome: DeviceImportOutcome, line: Int, maskedToken: @autoclosure () -> String?) {
        switch outcome {
        case .created: created += 1
        case .updated: updated += 1
        case .unchanged: unchanged += 1
        case .refused(let reason): refuse(line: line, reason: reason, maskedToken: maskedToken())
        }
    }

    package mutating func refuse(line: Int, reason: String, maskedToken: String?) {
        refused += 1
        if refusedLines.count < Self.maxListed {
            refusedLines.append(Refused(line: line, reason: reason, maskedToken: maskedToken))
        }
    }

    /// Devices read (every device line, whatever its outcome).
    package var devices: Int { created + updated + unchanged + refused }

    /// `created 3, updated 1, unchanged 0, refused 1`
    package var summary: String {
        "created \(created), updated \(updated), unchanged \(unchanged), refused \(refused)"
            + (dryRun ? " (dry run: nothing written)" : "")
    }

    /// The report as the admin API answers it and `push-server import --json` prints it.
    package var json: JSONValue {
        .object([
            "dryRun": .bool(dryRun),
            "created": .int(created),
            "updated": .int(updated),
            "unchanged": .int(unchanged),
            "refused": .int(refused),
            "lines": .int(lines),
            "refusedLines": .array(
                refusedLines.map { entry in
                    .object([
                        "line": .int(entry.line),
                        "reason": .string(entry.reason),
                        "token": entry.maskedToken.map(JSONValue.string) ?? .null,
                    ])
                }),
            "refusedNotListed": .int(refused - refusedLines.count),
        ])
    }

    /// `json` with what the converters of another provider's export left out of imported rows (`--from`,
    /// `?from=`), counted per kind, as `notes`; the plain report when there are none.
    package func json(notes: [String: Int]) -> JSONValue {
        guard !notes.isEmpty, case .object(var members) = json else { return json }
        members["notes"] = .object(notes.mapValues { .int($0) })
        return .object(members)
    }

    /// One text line per refused line, for the CLI.
    package var refusalLines: [String] {
        refusedLines.map { "line \($0.line): \($0.reason)" + ($0.maskedToken.map { " (token \($0))" } ?? "") }
    }
}
