import Dispatch
import Foundation
import Locking
import Logging

/// `push-server serve --config FILE`: runs until SIGTERM/SIGINT, then drains and exits 0.
enum ServeCommand: Command {
    static let usage = """
        Usage: push-server serve --config FILE

        Runs the server. Logs go to standard error (the journal under systemd). Under systemd (Type=notify) it sends
        READY=1 once it accepts requests, WATCHDOG=1 while healthy, and STOPPING=1 on SIGTERM.

        SIGTERM or SIGINT drains: new connections are refused, in-flight requests finish, running publishes
        checkpoint and unanswered notifications return to the queue (resumed on the next start). A second signal
        exits at once.

        SIGHUP re-reads the config file: a file with errors changes nothing (each error is logged); a good one applies
        its instances at once and logs the sections that need a restart.
        """

    /// Seconds the engine's drain may take; the whole drain gets `Application.drainMargin` (5 s) more, and systemd's
    /// TimeoutStopSec (30 s in deploy/push-server.service) must exceed that sum.
    static let gracePeriod: Duration = .seconds(20)

    static func run(_ arguments: Arguments) async throws -> ExitCode {
        try arguments.allowOnly(["config"])
        guard let path = arguments["config"] ?? arguments.positionals.first else {
            throw UsageError("--config FILE is required")
        }
        let (config, loadWarnings) = try ServerConfig.load(path: path, validateKey: APNsKeyCheck.problem)
        // Secrets others can read or know: refused on a listener the network reaches (docs/SECURITY.md, "Secrets").
        let exposure = config.exposureVerdict(config.exposureIssues(configPath: path))
        guard exposure.errors.isEmpty else { throw ConfigError(issues: exposure.errors) }
        let warnings = loadWarnings + exposure.warnings
        // Lines are written off the event loops, many per write(2) (BufferedLogSink); closed once the server
        // stopped, so a clean stop loses none.
        let sink = BufferedLogSink()
        let code = await serve(
            config: config, path: path, warnings: warnings,
            logger: Logger(label: "server", level: config.logLevel, sink: sink))
        await sink.close()
        return code
    }

    private static func serve(config: ServerConfig, path: String, warnings: [ConfigIssue], logger: Logger) async
        -> ExitCode
    {
        for warning in warnings {
            logger.warning("Configuration warning", ["field": warning.path, "problem": warning.message])
        }

        let notifier = SystemdNotifier()
        let app: Application
        let signals: SignalWatcher
        let reload: ReloadSignal
        do {
            // Stopped after everything else, so systemd sees a live process for as long as the drain takes.
            let watchdog = notifier.watchdogInterval.map { [SystemdWatchdog(notifier: notifier, interval: $0)] } ?? []
            app = try await Application(config: config, logger: logger, gracePeriod: gracePeriod, stopLast: watchdog)
            // Watched before the listener starts: a SIGTERM sent as soon as /health answers (a supervisor, a test)
            // arrived while SIGTERM was already ignored but its dispatch source not yet resumed, and was lost: the
            // process never stopped. A shutdown asked before `run()` waits in the service group's mailbox.
            signals = SignalWatcher(signals: [SIGTERM, SIGINT]) { [app] signal in
                logger.notice("Signal received, draining", ["signal": signal == SIGTERM ? "SIGTERM" : "SIGINT"])
                notifier.stopping()
                app.shutdown()
            }
            reload = ReloadSignal { [app] in
                logger.notice("SIGHUP received, reloading the config file", ["path": path])
                Task { await app.reloadConfig(path: path) }
            }
            do {
                try app.start()
            } catch {
                signals.cancel()
                reload.cancel()
                throw error
            }
        } catch {
            logger.critical("Start-up failed", ["error": "\(error)"])
            return .failure
        }

        notifier.ready(status: "Serving on \(config.listen.host):\(config.listen.port)")

        let report = await app.run()
        signals.cancel()
        reload.cancel()
        await app.close()
        // A service that failed, or a drain that outlived its grace period (both logged), is not a clean stop.
        return report.failures.isEmpty && report.unfinished.isEmpty ? .ok : .failure
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

/// Turns each SIGHUP into a callback (a config reload) instead of ending the process, SIGHUP's default.
final class ReloadSignal {
    private let source: any DispatchSourceSignal

    init(onSignal: @escaping @Sendable () -> Void) {
        signal(SIGHUP, SIG_IGN)
        source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: DispatchQueue(label: "push-server.reload"))
        source.setEventHandler(handler: onSignal)
        source.resume()
    }

    func cancel() { source.cancel() }
}
