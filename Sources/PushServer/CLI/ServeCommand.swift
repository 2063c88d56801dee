import Dispatch
import Foundation
import Logging
import Locking

/// `push-server serve --config FILE`: runs until SIGTERM/SIGINT, then drains and exits 0.
enum ServeCommand: Command {
    static let usage = """
    Usage: push-server serve --config FILE

    Runs the server. Logs go to standard error (the journal under systemd). Under systemd (Type=notify) it sends
    READY=1 once it accepts requests, WATCHDOG=1 while healthy, and STOPPING=1 on SIGTERM.

    SIGTERM or SIGINT drains: new connections are refused, in-flight requests finish, running publishes
    checkpoint and unanswered notifications return to the queue (resumed on the next start). A second signal
    exits at once.
    """

    /// Seconds a drain may take; systemd's TimeoutStopSec (30 s in deploy/push-server.service) must exceed it.
    static let gracePeriod = 20.0

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config"])
        guard let path = arguments["config"] ?? arguments.positionals.first else {
            throw UsageError("--config FILE is required")
        }
        let (config, warnings) = try ServerConfig.load(path: path, validateKey: APNsKeyCheck.problem)
        // Lines are written off the event loops, many per write(2) (BufferedLogSink); closed once the server
        // stopped, so a clean stop loses none.
        let sink = BufferedLogSink()
        let code = await serve(config: config, warnings: warnings,
                               logger: Logger(label: "server", level: config.logLevel, sink: sink))
        await sink.close()
        return code
    }

    private static func serve(config: ServerConfig, warnings: [ConfigIssue], logger: Logger) async -> ExitCode {
        for warning in warnings {
            logger.warning("Configuration warning", ["field": warning.path, "problem": warning.message])
        }

        let app: Application
        do {
            app = try await Application(config: config, logger: logger)
            try app.start()
        } catch {
            logger.critical("Start-up failed", ["error": "\(error)"])
            return .failure
        }

        let notifier = SystemdNotifier()
        let signals = SignalWatcher(signals: [SIGTERM, SIGINT]) { signal in
            logger.notice("Signal received, draining", ["signal": signal == SIGTERM ? "SIGTERM" : "SIGINT"])
            notifier.stopping()
            Task { await app.shutdown(gracePeriod: gracePeriod) }
        }
        notifier.ready(status: "Serving on \(config.listen.host):\(config.listen.port)")
        let watchdog = notifier.watchdogInterval.map { interval in
            Task {
                while !Task.isCancelled {
                    notifier.watchdog()
                    try? await Task.sleep(for: interval)
                }
            }
        }

        await app.run()
        watchdog?.cancel()
        signals.cancel()
        await app.close()
        return .ok
    }
}

/// Turns SIGTERM/SIGINT into a callback on a dispatch queue instead of killing the process. A second signal of
/// either kind exits at once, for an operator who does not want to wait for the drain.
final class SignalWatcher {
    private let sources: [any DispatchSourceSignal]

    init(signals: [Int32], onFirst: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "push-server.signals")
        let seen = Locked(false)
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                let again = seen.withLock { seen -> Bool in
                    defer { seen = true }
                    return seen
                }
                if again {
                    Console.err("push-server: second signal, exiting without draining")
                    exit(ExitCode.failure.rawValue)
                }
                onFirst(number)
            }
            source.resume()
            return source
        }
    }

    func cancel() {
        for source in sources { source.cancel() }
    }
}
