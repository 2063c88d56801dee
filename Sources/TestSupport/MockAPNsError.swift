import Foundation

/// Why launching or driving the mock APNs failed.
package enum MockAPNsError: Error, Equatable, CustomStringConvertible {
    /// The Python interpreter or the script could not be started.
    case launchFailed(String)
    /// The mock exited or stayed silent instead of printing its start-up JSON line.
    case noStartupLine(String)
    /// A socket call to the control API failed.
    case socket(operation: String, errno: Int32)
    /// The control API answered something that is not HTTP.
    case badControlResponse(request: String, detail: String)
    /// The control API answered a non-2xx status (e.g. 400 for an unknown behaviour field).
    case controlFailed(request: String, status: Int, body: String)
    /// A control API answer did not decode.
    case decoding(request: String, detail: String)
    /// The mock was already stopped.
    case stopped

    package var description: String {
        switch self {
        case .launchFailed(let detail): return "mock APNs launch failed: \(detail)"
        case .noStartupLine(let detail): return "mock APNs did not start: \(detail)"
        case .socket(let operation, let code):
            return "mock APNs control \(operation) failed: \(String(cString: strerror(code)))"
        case .badControlResponse(let request, let detail): return "mock APNs \(request): \(detail)"
        case .controlFailed(let request, let status, let body): return "mock APNs \(request) → \(status) \(body)"
        case .decoding(let request, let detail): return "mock APNs \(request): cannot decode answer: \(detail)"
        case .stopped: return "mock APNs already stopped"
        }
    }
}
