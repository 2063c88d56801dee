/// A FIFO of jobs with O(1) pop: a connection's ready queue is drained from the front on every turn.
struct APNsJobQueue {
    private var items: [APNsJob] = []
    private var head = 0

    var count: Int { items.count - head }

    mutating func push(_ job: APNsJob) { items.append(job) }

    mutating func pop() -> APNsJob? {
        guard head < items.count else { return nil }
        let job = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
        return job
    }
}
