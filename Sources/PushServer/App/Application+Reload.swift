import BeamsModel
import Foundation
import Locking
import Logging
import Observability

extension Application {
    /// Re-reads the config file (SIGHUP; docs/OPERATIONS.md, "Reloading the config file"). The whole file is read
    /// and validated first: with any error, nothing changes and each problem is logged on a line of its own. A
    /// good file applies what can change while running, the config file's instances (added, changed, removed,
    /// their credentials, webhooks, limits, quotas and weights), and names what needs a restart without applying
    /// it. Sets `push_config_reload_success` (1 or 0) and `push_config_reload_timestamp_seconds`.
    /// - Returns: whether the file was applied.
    @discardableResult
    package func reloadConfig(path: String) async -> Bool {
        let metrics = context.metrics
        metrics.set(.configReloadTimestamp, to: Date().timeIntervalSince1970.rounded(.down))
        let loaded: ServerConfig
        let warnings: [ConfigIssue]
        do throws(ConfigError) {
            (loaded, warnings) = try ServerConfig.load(path: path, validateKey: APNsKeyCheck.problem)
            let exposure = loaded.exposureVerdict(loaded.exposureIssues(configPath: path))
            guard exposure.errors.isEmpty else { throw ConfigError(issues: exposure.errors) }
        } catch {
            for issue in error.issues where issue.severity == .error {
                logger.error(
                    "Config reload refused; the running config stays",
                    ["field": issue.path, "problem": issue.message])
            }
            metrics.set(.configReloadSuccess, to: 0)
            return false
        }
        for warning in warnings {
            logger.warning("Configuration warning", ["field": warning.path, "problem": warning.message])
        }
        let running = context.config
        for section in Self.restartOnlyChanges(running, loaded) {
            logger.warning(
                "Config reload: this section changed but takes effect only after a restart",
                ["section": section])
        }
        // Each reload rebuilds the file's instances' senders (a replaced key file keeps its path), once.
        let generation = reloads.withLock { count -> Int in
            count += 1
            return count
        }
        let fingerprints = loaded.instanceFingerprints.mapValues { "\($0)#reload-\(generation)" }
        do {
            try await instanceSync.replaceConfigInstances(loaded.instances, fingerprints: fingerprints)
        } catch {
            // The file's instances are installed at the next refresh that reads the store.
            logger.warning(
                "Config reload: the store could not be read; the file's instances are applied once it answers",
                ["error": "\(error)"])
        }
        metrics.set(.configReloadSuccess, to: 1)
        logger.notice("Config reloaded", ["path": path, "instances": String(loaded.instances.count)])
        return true
    }

    /// The sections that differ between `running` and `loaded` and are read only at start.
    static func restartOnlyChanges(_ running: ServerConfig, _ loaded: ServerConfig) -> [String] {
        var changed: [String] = []
        if running.listen != loaded.listen { changed.append("listen") }
        if running.storage != loaded.storage { changed.append("storage") }
        if running.ops != loaded.ops { changed.append("ops") }
        if running.limits != loaded.limits { changed.append("limits") }
        if running.apns != loaded.apns { changed.append("apns") }
        if running.webPush != loaded.webPush { changed.append("webPush") }
        if running.engine != loaded.engine { changed.append("engine") }
        if running.webhooks != loaded.webhooks { changed.append("webhooks") }
        if running.console != loaded.console { changed.append("console") }
        if running.keys != loaded.keys { changed.append("keys") }
        if running.admin != loaded.admin { changed.append("admin") }
        if running.tracing != loaded.tracing { changed.append("tracing") }
        if running.logLevel != loaded.logLevel { changed.append("log") }
        return changed
    }
}
