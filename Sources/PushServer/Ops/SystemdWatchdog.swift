import Clocks
import Lifecycle

/// Sends systemd's `WATCHDOG=1` keep-alive every `interval` (half of `WATCHDOG_USEC`, see `SystemdNotifier`) until
/// cancelled. Stopped last, so systemd sees a live process for as long as the drain takes.
struct SystemdWatchdog: Service {
    let name = "systemd-watchdog"
    let notifier: SystemdNotifier
    let interval: Duration

    func run() async {
        while true {
            notifier.watchdog()
            do {
                try await MonotonicTimer.sleep(for: interval)
            } catch {
                return
            }
        }
    }
}
