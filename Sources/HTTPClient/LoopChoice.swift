/// Which curl loop of an `HTTPExchangeClient` takes the next exchange: the one the last exchange went to while it
/// has a free stream (`limit`) and carries at most `slack` more queued exchanges than the least busy loop, else the
/// least busy (the first of equals).
///
/// Why not always the least busy: a sender's fan-out hands its requests over in runs (a batch of window slots,
/// `InFlightWindow`), and spreading a run one by one over every loop woke each loop for it (`curl_multi_wakeup`),
/// each then starting a request or two per turn, and every turn of libcurl 7.88 walks (and `poll`s) every attached
/// transfer. Kept on one loop, a run wakes it once and its later requests wait in the inbox for the same turn, as
/// an APNs pool sends a run to the connection that freed its slots (docs/BENCHMARKS.md, "FCM: one resumption per
/// batch"). Loads stay within `slack` of each other, and no loop is given more than `limit` while another has room.
enum LoopChoice {
    /// - Parameters:
    ///   - count: loops (at least one).
    ///   - last: the loop the previous exchange went to.
    ///   - slack: how far above the least busy loop the last one may be and still be chosen.
    ///   - limit: the streams of one loop's connection: the last loop is kept only below it.
    ///   - load: exchanges queued on loop `index`.
    static func pick(count: Int, last: Int, slack: Int, limit: Int, load: (Int) -> Int) -> Int {
        var lowest = 0
        var lowestLoad = load(0)
        for index in 1..<max(1, count) {
            let candidate = load(index)
            if candidate < lowestLoad {
                lowest = index
                lowestLoad = candidate
            }
        }
        guard last != lowest, last >= 0, last < count else { return lowest }
        let lastLoad = load(last)
        return lastLoad < limit && lastLoad <= lowestLoad + slack ? last : lowest
    }
}
