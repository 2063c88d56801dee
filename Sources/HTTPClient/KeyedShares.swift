import Locking

/// A bounded share of a sender's window per key (a destination): at most `limit` slots per key, so one slow
/// destination (a push service that drops connection attempts) cannot take every slot of the window and hold up
/// messages to the others. Each busy key is an `AdmissionWindow` of the kit (a count of slots): `acquire` suspends
/// while the key's share is full and is woken, in order, by `release` of the same key; a waiter leaves when its
/// task or run is cancelled; `close` wakes every waiter with false. A key holding nothing, with nobody asking for
/// it, is forgotten, so the shares grow only with busy keys.
package final class KeyedShares: Sendable {
    /// One key's count of slots.
    struct Share: AdmissionPolicy {
        let limit: Int
        var held = 0

        mutating func admit() -> Void? {
            guard held < limit else { return nil }
            held += 1
            return ()
        }
    }

    private typealias Window = AdmissionWindow<Share, Void>

    /// A busy key: its window and the `acquire` calls under way for it (waiting or about to), which keep it.
    private struct Entry {
        let window: Window
        var askers = 0
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var closed = false
    }

    package let limit: Int
    /// Lock order: this lock, then a window's (never the other way round).
    private let state = Locked(State())

    package init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Takes a slot of `key`, suspending while the key holds `limit`. Returns false (nothing taken) once closed,
    /// or when the calling task or `scope` (the request's run) is cancelled while it waits.
    package func acquire(_ key: String, cancelledBy scope: RetryScope? = nil) async -> Bool {
        let window = state.withLock { state -> Window? in
            if state.closed { return nil }
            var entry = state.entries[key] ?? Entry(window: Window(Share(limit: limit)))
            entry.askers += 1
            state.entries[key] = entry
            return entry.window
        }
        guard let window else { return false }
        let admission = await window.acquire((), cancelledBy: scope)
        state.withLock { state in
            state.entries[key]?.askers -= 1
            Self.forgetIfIdle(key, &state)
        }
        if case .admitted = admission { return true }
        return false
    }

    /// Frees a slot of `key`: its longest waiter takes it over.
    package func release(_ key: String) {
        let waiter = state.withLock { state -> Window.Waiter? in
            guard let window = state.entries[key]?.window else { return nil }
            let waiter = window.withState { share -> Window.Waiter? in
                if !share.isClosed, let waiter = share.popWaiter() { return waiter }  // the slot passes on
                share.policy.held = max(0, share.policy.held - 1)
                return nil
            }
            Self.forgetIfIdle(key, &state)
            return waiter
        }
        waiter?.admit(())
    }

    /// Refuses new slots and wakes every waiter with false.
    package func close() {
        let windows = state.withLock { state -> [Window] in
            state.closed = true
            return state.entries.values.map(\.window)
        }
        for window in windows { window.close() }
    }

    /// `acquire` calls suspended, every key together.
    package var waiting: Int {
        state.withLock { state in state.entries.values.reduce(0) { $0 + $1.window.withState { $0.waiting } } }
    }

    /// Slots `key` holds now.
    package func held(_ key: String) -> Int {
        state.withLock { $0.entries[key]?.window.withState { $0.policy.held } ?? 0 }
    }

    /// Keys remembered now: those holding a slot or asked for (tests check idle keys are forgotten).
    package var busyKeys: Int { state.withLock { $0.entries.count } }

    private static func forgetIfIdle(_ key: String, _ state: inout State) {
        guard let entry = state.entries[key], entry.askers == 0,
            entry.window.withState({ $0.policy.held == 0 })
        else { return }
        state.entries[key] = nil
    }
}
