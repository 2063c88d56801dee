import Lifecycle
import Observability
import PushStore

/// `StoreHealth`'s probe loop as a service: idle while the store writes; during an outage it probes the store
/// every `probeInterval`, so the server notices by itself that it can write again.
struct StoreWatchdog: Service {
    let name = "store-watchdog"
    let health: StoreHealth
    let store: any PushStorage
    var probeInterval: Duration = .seconds(1)

    func run() async {
        await health.run(store: store, probeInterval: probeInterval)
    }
}
