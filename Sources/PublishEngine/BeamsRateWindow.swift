/// Beams' rate limit as the bridge keeps it, per Beams instance: at most `limit` requests in any `window` seconds,
/// and nothing before a `Retry-After` Beams gave. Beams allows 100 per second, then answers 429; the bridge counts
/// 100 per 1.2 s, because a request is counted when it is handed to the client and Beams counts it on arrival: a
/// first request that waited for its connection and a later one that did not would otherwise land within one
/// second of Beams' clock. Pure: times are monotonic seconds handed in.
package struct BeamsRateWindow: Sendable {
    let limit: Int
    let window: Double
    private var sent: [Double] = []
    private var pausedUntil: Double = 0

    init(limit: Int = 100, window: Double = 1.2) {
        self.limit = limit
        self.window = window
    }

    /// Takes one request's room at `now`. - Returns: nil when taken, else how long to wait before asking again.
    mutating func take(now: Double) -> Double? {
        if now < pausedUntil { return pausedUntil - now }
        sent.removeAll { $0 <= now - window }
        guard sent.count < limit else { return max(0.001, sent[0] + window - now) }
        sent.append(now)
        return nil
    }

    /// Beams said to wait (429 with `Retry-After`): no request before `now + seconds`.
    mutating func pause(now: Double, seconds: Double) {
        pausedUntil = max(pausedUntil, now + seconds)
    }
}
