import Locking
import TestSupport
import XCTest

/// The one admission window: first in first out, slots passed on by whoever frees them, and a waiter that leaves
/// at once when its task or its cancellation source is cancelled, also before it queued.
final class AdmissionWindowTests: XCTestCase {
    /// `capacity` numbered slots; a grant is the slot's number.
    struct Numbered: AdmissionPolicy {
        var free: [Int]
        mutating func admit() -> Int? { free.isEmpty ? nil : free.removeFirst() }
    }

    /// A cancellation source a test cancels by hand (as a publish run's `RetryScope`).
    final class Source: CancellationSource {
        private let state = Locked((cancelled: false, next: 0, handlers: [Int: @Sendable () -> Void]()))
        func register(onCancel: @escaping @Sendable () -> Void) -> Int? {
            state.withLock { state -> Int? in
                guard !state.cancelled else { return nil }
                state.next += 1
                state.handlers[state.next] = onCancel
                return state.next
            }
        }
        func unregister(_ registration: Int) { state.withLock { _ = $0.handlers.removeValue(forKey: registration) } }
        func cancel() {
            let handlers = state.withLock { state -> [@Sendable () -> Void] in
                state.cancelled = true
                defer { state.handlers = [:] }
                return Array(state.handlers.values)
            }
            for handler in handlers { handler() }
        }
        var registered: Int { state.withLock { $0.handlers.count } }
    }

    typealias Window = AdmissionWindow<Numbered, String>

    /// Frees slot `number`: the longest waiter takes it, else it goes back to the policy.
    private static func free(_ window: Window, _ number: Int) {
        let waiter = window.withState { state -> Window.Waiter? in
            if let waiter = state.popWaiter() { return waiter }
            state.policy.free.append(number)
            return nil
        }
        waiter?.admit(number)
    }

    private func waiting(_ window: Window, _ count: Int) async throws {
        try await eventually("\(count) waiting") { window.withState { $0.waiting } == count }
    }

    func testWaitersAreAdmittedInArrivalOrderWithTheSlotsFreed() async throws {
        let window = Window(Numbered(free: [1]))
        guard case .admitted(1) = await window.acquire("first") else { return XCTFail("a free slot is taken at once") }
        let order = Locked<[String]>([])
        var tasks: [Task<Void, Never>] = []
        for name in ["a", "b", "c"] {
            tasks.append(
                Task {
                    if case .admitted = await window.acquire(name) { order.withLock { $0.append(name) } }
                })
            try await waiting(window, tasks.count)
        }
        for _ in 0..<3 {
            Self.free(window, 1)
            try await eventually { window.withState { $0.waiting } == 0 || order.withLock { $0.count } > 0 }
        }
        for task in tasks { await task.value }
        XCTAssertEqual(order.withLock { $0 }, ["a", "b", "c"])
    }

    func testANewcomerDoesNotOvertakeTheLineWhenASlotIsFree() async throws {
        let window = Window(Numbered(free: []))
        let waiter = Task { await window.acquire("waiter") }
        try await waiting(window, 1)
        window.withState { $0.policy.free = [7] }  // a slot freed without admitting anybody
        let newcomer = Task { await window.acquire("newcomer") }
        try await waiting(window, 2)
        Self.free(window, 8)
        guard case .admitted(8) = await waiter.value else { return XCTFail("the waiter goes first") }
        newcomer.cancel()
        _ = await newcomer.value
    }

    func testATaskCancelledWhileWaitingLeavesAtOnceAndTakesNoSlot() async throws {
        let window = Window(Numbered(free: []))
        let ended = WaitableState<Window.Admission?>(nil)
        let cancelled = Task {
            let admission = await window.acquire("cancelled")
            ended.update { $0 = admission }
        }
        let other = Task { await window.acquire("other") }
        try await waiting(window, 2)
        cancelled.cancel()
        // Without waiting for a slot: none is freed unless this fails (then freed, so the test ends).
        let left = await ended.wait(until: { $0 != nil }, timeout: .seconds(5))
        guard left, case .cancelled? = ended.read({ $0 }) else {
            Self.free(window, 0)
            Self.free(window, 0)
            _ = await other.value
            return XCTFail("still waiting for a slot after its task was cancelled")
        }
        XCTAssertEqual(window.withState { $0.waiting }, 1)
        Self.free(window, 3)
        guard case .admitted(3) = await other.value else { return XCTFail("the slot went to the next waiter") }
    }

    func testASourceCancelledWhileWaitingEndsTheWaitAndUnregisters() async throws {
        let window = Window(Numbered(free: []))
        let source = Source()
        let waiter = Task { await window.acquire("run", cancelledBy: source) }
        try await waiting(window, 1)
        XCTAssertEqual(source.registered, 1)
        source.cancel()
        guard case .cancelled = await waiter.value else { return XCTFail("left the line") }
        XCTAssertEqual(window.withState { $0.waiting }, 0)
    }

    func testCancelledBeforeQueueingNeverQueues() async {
        let window = Window(Numbered(free: []))
        let source = Source()
        source.cancel()
        guard case .cancelled = await window.acquire("late", cancelledBy: source) else { return XCTFail("refused") }
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await window.acquire("cancelled task")
        }
        guard case .cancelled = await task.value else { return XCTFail("refused") }
        XCTAssertEqual(window.withState { $0.waiting }, 0)
        // A slot freed later goes back to the policy: nobody cancelled holds a place.
        Self.free(window, 1)
        XCTAssertEqual(window.withState { $0.policy.free }, [1])
    }

    func testCloseRefusesWaitersAndNewcomersAndReturnsWhatTheyBrought() async throws {
        let window = Window(Numbered(free: []))
        let first = Task { await window.acquire("first") }
        try await waiting(window, 1)
        let second = Task { await window.acquire("second") }
        try await waiting(window, 2)
        XCTAssertEqual(window.close(), ["first", "second"])
        guard case .closed = await first.value, case .closed = await second.value else { return XCTFail("refused") }
        guard case .closed = await window.acquire("late") else { return XCTFail("refused") }
    }

    /// Cancellations racing with admissions from threads: every caller ends exactly once, admitted or cancelled,
    /// and no slot is lost (a lost wake-up would hang here; a double resume would crash).
    func testCancellationsRacingWithAdmissionsLoseNoSlot() async {
        for _ in 0..<50 {
            let window = Window(Numbered(free: []))
            let tasks = (0..<8).map { index in Task { await window.acquire("\(index)") } }
            let freed = WaitableState(false)
            Thread {
                for number in 0..<8 { Self.free(window, number) }
                freed.update { $0 = true }
            }.start()
            for task in tasks where Bool.random() { task.cancel() }
            var admitted = 0
            for task in tasks { if case .admitted = await task.value { admitted += 1 } }
            await freed.waitIgnoringCancellation { $0 }
            let spare = window.withState { $0.policy.free.count }
            XCTAssertEqual(admitted + spare, 8, "every slot is held or back with the policy")
        }
    }
}
