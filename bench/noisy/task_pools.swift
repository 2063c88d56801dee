// How long a Swift task waits for a worker thread while tasks of the default priority hold all of them (issue 25,
// docs/BENCHMARKS.md "Noisy neighbour"). Not part of the package:
//
//     swiftc -O bench/noisy/task_pools.swift -o /tmp/task_pools && /tmp/task_pools
//
// Four default-priority tasks run jobs that never suspend (as a pump that hands a sender a page without waiting
// would), then a task of each priority is started from a plain thread (as the HTTP event loop starts a handler)
// and the time until it runs is printed, with the nice value of the thread it ran on (Dispatch sets it from the
// priority). Printed: the load average, then per priority the wait in ms and the thread's nice value.
import Foundation

func threadNice() -> String {
    let stat = (try? String(contentsOfFile: "/proc/thread-self/stat", encoding: .utf8)) ?? ""
    let fields = stat.split(separator: ")").last?.split(separator: " ") ?? []
    return fields.count > 16 ? String(fields[16]) : "?"
}

let busyUntil = Date().addingTimeInterval(4)
for _ in 0..<4 {
    Task(priority: .medium) {
        while Date() < busyUntil {
            var sum = 0
            for i in 0..<50_000_000 { sum &+= i }
            if sum == 42 { print("") }
        }
    }
}
Thread.sleep(forTimeInterval: 0.5)
print("load", (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.prefix(14) ?? "?")

func probe(_ priority: TaskPriority, _ name: String) {
    let started = DispatchTime.now().uptimeNanoseconds
    let ran = DispatchSemaphore(value: 0)
    let nice = Locked("?")
    Thread {
        Task(priority: priority) {
            nice.set(threadNice())
            ran.signal()
        }
    }.start()
    ran.wait()
    let waited = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e6
    print(name, String(format: "waited %.1f ms", waited), "on a thread at nice", nice.get())
}

final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value
    init(_ value: Value) { self.value = value }
    func set(_ new: Value) { lock.withLock { value = new } }
    func get() -> Value { lock.withLock { value } }
}

for priority in [TaskPriority.high, .medium, .low] {
    probe(priority, "\(priority)".padding(toLength: 24, withPad: " ", startingAt: 0))
}
exit(0)
