import SQL

/// A checkpoint's answered refs as `publish_answered` stores them: closed ranges of consecutive refs, one row each
/// (`ref` its first ref, `last_ref` its last), instead of one row per ref. Answers come back out of order with about
/// a window of requests in flight, so most refs are above the watermark when their checkpoint is written; one row
/// per ref was inserted and then deleted for nearly every notification of a fan-out (about 9,000 of 282,000
/// instructions per notification). Answers of different connections interleave, so runs are short (about 3.5 refs
/// in a 5,000-device fan-out: 71 % fewer rows, the checkpoint about 4,000 instructions per notification cheaper,
/// docs/BENCHMARKS.md "Answered refs as ranges"). The set remembered is the same: a range holds only refs that were
/// answered, so a resumed run skips exactly the refs it skipped before.
///
/// A row written before schema step `schemaStep` has no `last_ref` (NULL) and still means its one ref, so a
/// database upgraded with publishes in flight needs no rewrite. Readers take a row as `ref ... coalesce(last_ref,
/// ref)` and keep only the refs above the cursor: a range the cursor stands inside stays until the cursor passes its
/// last ref (`PublishQueueSQL.forgetAnswered`).
package struct AnsweredRanges: Equatable, Sendable {
    /// Each range's first ref, ascending.
    package private(set) var firsts: [Int64] = []
    /// Each range's last ref (at least its first), in the order of `firsts`.
    package private(set) var lasts: [Int64] = []

    /// The maximal runs of consecutive refs among `refs` that are above `cursor` and at most `through` (a shard's
    /// last ref, so that no range of a shard's checkpoint reaches into the next shard). A ref listed twice counts once.
    package init(_ refs: [Int64], above cursor: Int64, through: Int64 = .max) {
        var kept: [Int64] = []
        kept.reserveCapacity(refs.count)
        for ref in refs where ref > cursor && ref <= through { kept.append(ref) }
        guard !kept.isEmpty else { return }
        kept.sort()
        var first = kept[0]
        var last = first
        for ref in kept.dropFirst() where ref != last {
            // `last + 1` cannot overflow: `ref` is above `last`, so `last` is below `Int64.max`.
            if ref == last + 1 {
                last = ref
            } else {
                firsts.append(first)
                lasts.append(last)
                first = ref
                last = ref
            }
        }
        firsts.append(first)
        lasts.append(last)
    }

    /// Whether there is no range (no ref above the cursor).
    package var isEmpty: Bool { firsts.isEmpty }

    /// How many ranges, the rows a checkpoint writes.
    package var count: Int { firsts.count }

    /// The ranges as a JSON array of `[first, last]` pairs, as SQLite's `json_each` reads them in one statement.
    package var jsonPairs: String {
        var text = "["
        text.reserveCapacity(2 + count * 16)
        for (first, last) in zip(firsts, lasts) {
            if text.utf8.count > 1 { text += "," }
            text += "[" + String(first) + "," + String(last) + "]"
        }
        return text + "]"
    }

    /// Adds to `refs` the refs of the stored row `first ... last` (`last` being `coalesce(last_ref, ref)`) that are
    /// above `cursor` and at most `through`: what a resumed run skips.
    package static func insert(
        first: Int64, last: Int64, above cursor: Int64, through: Int64 = .max, into refs: inout Set<Int64>
    ) {
        // Clipped on both sides: a range the cursor stands inside is kept until the cursor passes its end, and a
        // shard's read must not hand out refs of the next shard even if such a row were ever written.
        guard cursor < Int64.max else { return }
        let low = max(first, cursor + 1)
        let high = min(last, through)
        guard low <= high else { return }
        for ref in low...high { refs.insert(ref) }
    }

    /// Schema step: `publish_answered.last_ref` (SQLite step 20, PostgreSQL step 19). Nullable with no default, so
    /// the rows already there keep meaning one ref each and neither backend rewrites the table.
    package static let schemaStep = SchemaStep(
        .addColumns(table: "publish_answered", [SchemaColumn("last_ref", .integer, nullable: true)]))
}
