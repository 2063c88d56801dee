import Clocks
import Locking
import Logging

/// Runs services side by side and stops them one after another.
///
/// `run()` starts every service, then waits for a reason to stop: `shutdown()`, the cancellation of the task
/// running the group, or a service that throws. It then cancels the services in the order they were given,
/// awaiting each one's return before cancelling the next, so that a later service still works while an earlier one
/// drains (the HTTP listener stops accepting before the engine drains; the ops listener answers until the end).
/// A service that returns by itself before that is left alone; the others keep running.
///
/// The whole drain has one grace period. When it runs out the group stops waiting: it cancels the rest at once,
/// names in its report (and the log) the services that had not returned, and returns, so the process can exit.
package final class ServiceGroup: Sendable {
    /// How a group's run ended.
    package struct Report: Sendable {
        /// Every service that returned, in the order it did.
        package var stopped: [String] = []
        /// The services that had not returned when the grace period ran out (cancelled, not awaited).
        package var unfinished: [String] = []
        /// The errors services threw, in the order they came; the first one stopped the group.
        package var failures: [ServiceFailure] = []

        package init() {}
    }

    private enum Event: Sendable {
        case shutdown(reason: String)
        case returned(index: Int, error: (any Error)?)
        case gracePeriodEnded
    }

    private let services: [any Service]
    private let gracePeriod: Duration
    private let logger: Logger
    private let onStopping: @Sendable () -> Void
    private let mailbox = Mailbox<Event>()
    private let started = Locked(false)
    private let stopRequested = Locked(false)

    /// - Parameters:
    ///   - services: in the order they are stopped in.
    ///   - gracePeriod: how long the whole drain may take, from the first cancellation to the last return.
    ///   - onStopping: called once when the group starts stopping, for whatever reason, before it cancels the first
    ///     service (say, to make `/ready` answer 503 while the rest drains).
    package init(
        services: [any Service], gracePeriod: Duration, logger: Logger,
        onStopping: @escaping @Sendable () -> Void = {}
    ) {
        self.services = services
        self.gracePeriod = gracePeriod
        self.logger = logger
        self.onStopping = onStopping
    }

    /// Starts the drain (returns at once; `run()` returns when it is done). Safe to call any number of times, from
    /// any thread (a signal handler's queue), before `run()` too: the services then start and are stopped at once.
    package func shutdown() {
        requestShutdown(reason: "requested")
    }

    /// Posts the first request only, so the mailbox holds at most one per group however often it is asked.
    private func requestShutdown(reason: String) {
        let first = stopRequested.withLock { requested -> Bool in
            defer { requested = true }
            return !requested
        }
        if first { mailbox.post(.shutdown(reason: reason)) }
    }

    /// Runs the services until the group stops, then stops them in order. Call once.
    /// - Returns: what stopped, in which order, what did not, and what failed.
    package func run() async -> Report {
        let first = started.withLock { started -> Bool in
            defer { started = true }
            return !started
        }
        guard first else {
            logger.error("A service group was run twice; the second run does nothing")
            return Report()
        }
        let mailbox = self.mailbox
        // Unstructured, so that each service is cancelled on its own, in order (a task group cancels all at once).
        let tasks = services.enumerated().map { index, service in
            Task {
                do {
                    try await service.run()
                    mailbox.post(.returned(index: index, error: nil))
                } catch {
                    mailbox.post(.returned(index: index, error: error))
                }
            }
        }
        return await withTaskCancellationHandler {
            await supervise(tasks)
        } onCancel: {
            self.requestShutdown(reason: "cancelled")
        }
    }

    private func supervise(_ tasks: [Task<Void, Never>]) async -> Report {
        var report = Report()
        var running = Set(services.indices)
        let reason = await serve(&running, &report)
        onStopping()

        logger.notice(
            "Stopping services",
            [
                "reason": reason, "order": services.map(\.name).joined(separator: ","), "grace": "\(gracePeriod)",
            ])
        let deadline = Task { [mailbox, gracePeriod] in
            do {
                try await MonotonicTimer.sleep(for: gracePeriod)
                mailbox.post(.gracePeriodEnded)
            } catch {
                // Cancelled: everything returned in time.
            }
        }
        defer { deadline.cancel() }

        var expired = false
        for index in services.indices where running.contains(index) && !expired {
            let name = services[index].name
            logger.info("Stopping service", ["service": name])
            let cancelled = MonotonicClock.now()
            tasks[index].cancel()
            while running.contains(index) && !expired {
                switch await mailbox.next() {
                case .returned(let returned, let error):
                    running.remove(returned)
                    record(returned, error, &report)
                    if returned == index {
                        logger.notice("Service stopped", ["service": name, "ms": Self.milliseconds(since: cancelled)])
                    } else {
                        logger.notice("Service stopped before its turn", ["service": services[returned].name])
                    }
                case .gracePeriodEnded:
                    expired = true
                case .shutdown:
                    continue  // Already stopping.
                }
            }
        }
        if expired {
            for index in running.sorted() { tasks[index].cancel() }
            report.unfinished = running.sorted().map { services[$0].name }
            logger.error(
                "Services did not stop within the grace period; not waiting for them",
                [
                    "services": report.unfinished.joined(separator: ","), "grace": "\(gracePeriod)",
                ])
        }
        logger.notice("Services stopped", ["order": report.stopped.joined(separator: ",")])
        return report
    }

    /// Waits while every service serves. - Returns: why the group stops.
    private func serve(_ running: inout Set<Int>, _ report: inout Report) async -> String {
        while true {
            switch await mailbox.next() {
            case .shutdown(let reason):
                return reason
            case .returned(let index, let error):
                running.remove(index)
                record(index, error, &report)
                if error != nil { return "\(services[index].name) failed" }
                logger.info("Service finished before shutdown", ["service": services[index].name])
            case .gracePeriodEnded:
                continue
            }
        }
    }

    private func record(_ index: Int, _ error: (any Error)?, _ report: inout Report) {
        let name = services[index].name
        report.stopped.append(name)
        if let error {
            report.failures.append(ServiceFailure(service: name, error: error))
            logger.error("Service failed", ["service": name, "error": "\(error)"])
        }
    }

    private static func milliseconds(since start: UInt64) -> String {
        let elapsed = MonotonicClock.elapsed(since: start).components
        return String(elapsed.seconds * 1000 + elapsed.attoseconds / 1_000_000_000_000_000)
    }
}

/// A service's error, with the service's name.
package struct ServiceFailure: Error, CustomStringConvertible {
    package let service: String
    package let error: any Error

    package var description: String { "\(service): \(error)" }
}

/// Events for one consumer, delivered in order: a `FIFO` in the kit's `WaitableState`. Waiting ignores cancellation
/// on purpose: the group goes on collecting its services' returns after the task running it was cancelled (that is
/// how it is told to stop).
private final class Mailbox<Event: Sendable>: Sendable {
    private let events = WaitableState(FIFO<Event>())

    func post(_ event: Event) {
        events.update { $0.append(event) }
    }

    /// The oldest event, once there is one. One consumer only: nobody else takes the event it waited for.
    func next() async -> Event {
        while true {
            await events.waitIgnoringCancellation(until: { !$0.isEmpty })
            if let event = events.update({ $0.popFirst() }) { return event }
        }
    }
}
