/// Which queued writes go into a store thread's next group transaction: deficit round robin across tenants, weighted
/// by what each write costs. Used by SQLite's writer and PostgreSQL's connection threads (`FairQueue`).
///
/// SQLite has one writer (and PostgreSQL a few connection threads), so every instance's writes share it. In arrival order, eight anonymous clients each
/// storing 5,000 interest names kept another instance's one-row registrations and publishes waiting behind all of
/// them: seconds instead of milliseconds. Here each tenant (an instance; the publish engine is one more) has its own
/// queue; a batch visits them in turn, and a tenant's turn adds its quantum to its deficit and takes its writes while
/// their cost (rows, roughly) fits the deficit (Shreedhar and Varghese's deficit round robin). A tenant with a cheap
/// write therefore gets into the next batch whatever another has queued, and over time each busy tenant gets an
/// equal share of rows written (times its weight), not of operations. A batch stops at `maxCount` writes or
/// `maxCost` rows, so the transaction a newcomer waits for is bounded too; it always takes at least one write, so a
/// write dearer than `maxCost` still runs, alone.
///
/// A tenant that had nothing queued is a newcomer: its first quantum is served before the tenants with a backlog
/// (the "new flows first" rule of fq_codel, RFC 8290 §4.2), in a batch of newcomers' writes only, and `takeBatch`
/// says so (`tookNewcomer`), so the writer can finish that transaction with newcomers' writes (`newcomersOnly`) and
/// commit. Round robin alone put another instance's one registration behind the rest of the backlogged tenant's turn
/// and the rest of the transaction: 3–11 times its quiet latency under an interest flood (`bench/noisy/run.sh`). A
/// tenant is new only after all its writes were taken, so a backlog never is, and a sparse tenant gains one quantum
/// per idle spell, not a larger share. A write that continues a larger one (`continuing`: the next step of a
/// 5,000-name interest set, queued only once the previous step committed) never makes its tenant new: between two
/// steps such a tenant has nothing queued for a moment, and as a newcomer each of its steps went into the other
/// newcomers' transaction, so a registration waited for up to three of another instance's steps after its own
/// (`bench/noisy/run.sh`, a log of every transaction, docs/BENCHMARKS.md "Noisy neighbour").
///
/// Urgent writes (lease renewals) bypass the tenants and go first. A pure value: no locks, no threads
/// (`FairQueue` wraps it), tested without a database.
package struct FairBatches<Item> {
    private struct Queued {
        var item: Item
        var cost: Int
    }

    private struct Tenant {
        var items = FIFO<Queued>()
        var deficit = 0
        var weight = 1
        var isEmpty: Bool { items.isEmpty }
    }

    /// Deficit added per turn, in cost units (rows). Larger: fewer rounds to build a batch of dear writes; smaller:
    /// finer sharing.
    package let quantum: Int
    private var tenants: [String: Tenant] = [:]
    /// Tenants with queued writes that had none before (credited with their quantum on arrival), served before
    /// `ring`, in arrival order; one that still has writes after its quantum joins `ring`.
    private var newcomers: [String] = []
    /// Tenants with a backlog, in turn order; `cursor` is whose turn comes next.
    private var ring: [String] = []
    private var cursor = 0
    /// Whether the tenant at `cursor` was cut off by a full batch: it continues its turn without a new quantum.
    private var midTurn = false
    private var urgent: [Item] = []
    /// Queued writes, urgent ones included.
    package private(set) var count = 0
    /// Whether the latest `takeBatch` took a write of a newcomer: a write nothing of its tenant's was queued
    /// before, which the writer should commit without adding more.
    package private(set) var tookNewcomer = false

    package init(quantum: Int = 256) {
        self.quantum = max(1, quantum)
    }

    /// Queues a write for `tenant`. `cost` is at least 1; `weight` (at least 1) multiplies the tenant's quantum and
    /// is taken from its latest write. A `continuing` write (the next step of a larger write) joins the backlog's
    /// turns even when nothing of its tenant is queued: it is never a newcomer's.
    package mutating func push(_ item: Item, tenant: String, cost: Int, weight: Int = 1, continuing: Bool = false) {
        var queue = tenants.removeValue(forKey: tenant) ?? Tenant()
        // A tenant is in `newcomers` or `ring` exactly while it has queued writes.
        if queue.isEmpty {
            if continuing {
                // No credit: it gets its quantum when its turn comes, like any backlogged tenant.
                ring.append(tenant)
                queue.deficit = 0
            } else {
                newcomers.append(tenant)
                queue.deficit = quantum * max(1, weight)
            }
        }
        queue.items.append(Queued(item: item, cost: max(1, cost)))
        queue.weight = max(1, weight)
        tenants[tenant] = queue
        count += 1
    }

    /// Queues a write ahead of every tenant's: the next batch takes it first.
    package mutating func pushUrgent(_ item: Item) {
        urgent.append(item)
        count += 1
    }

    /// The next batch: urgent writes first, then newcomers' first quanta, then the tenants' in deficit round robin,
    /// at most `maxCount` writes and `maxCost` rows (but at least one write whenever any is queued). A batch that
    /// took a newcomer's write stops before the round robin, and with `newcomersOnly` it is left out anyway: what a
    /// transaction that holds a newcomer's write may still take without making it wait for a backlog.
    package mutating func takeBatch(maxCount: Int, maxCost: Int, newcomersOnly: Bool = false) -> [Item] {
        let maxCount = max(1, maxCount)
        var batch = Array(urgent.prefix(maxCount))
        urgent.removeFirst(batch.count)
        var cost = batch.count
        count -= batch.count
        tookNewcomer = false
        // Newcomers first, each up to the quantum it was credited with on arrival.
        while batch.count < maxCount, let name = newcomers.first {
            var tenant = tenants.removeValue(forKey: name)!
            let (took, full) = take(from: &tenant, into: &batch, cost: &cost, maxCount: maxCount, maxCost: maxCost)
            if took { tookNewcomer = true }
            if tenant.isEmpty {
                // Gone idle: it keeps no credit (deficit round robin's rule) and comes back as a newcomer.
                newcomers.removeFirst()
            } else if full {
                // The batch is full: the newcomer goes on first in the next one.
                tenants[name] = tenant
                return batch
            } else {
                // Its quantum is spent (or its next write is dearer): from now on it takes turns with the backlog.
                tenants[name] = tenant
                newcomers.removeFirst()
                ring.append(name)
            }
        }
        // A batch with a newcomer's write takes nothing from the backlog: the writer commits it after this slice.
        while !newcomersOnly, !tookNewcomer, batch.count < maxCount, !ring.isEmpty {
            var tookAny = false
            var turns = ring.count
            while turns > 0, batch.count < maxCount, !ring.isEmpty {
                turns -= 1
                if cursor >= ring.count { cursor = 0 }
                let name = ring[cursor]
                // Taken out while it changes, so its array is not copied on write.
                var tenant = tenants.removeValue(forKey: name)!
                if !midTurn { tenant.deficit += quantum * tenant.weight }
                midTurn = false
                let (took, full) = take(from: &tenant, into: &batch, cost: &cost, maxCount: maxCount, maxCost: maxCost)
                if took { tookAny = true }
                if tenant.isEmpty {
                    // An idle tenant keeps no credit: deficit round robin's rule, so saving up cannot buy a burst.
                    ring.remove(at: cursor)
                } else {
                    tenants[name] = tenant
                    if full {
                        midTurn = true
                        return batch
                    }
                    cursor += 1
                }
            }
            // A round that took nothing ends a batch that has something; an empty one needs more rounds, each
            // adding a quantum, until the cheapest head fits (a write dearer than many quanta).
            if !tookAny && !batch.isEmpty { break }
        }
        return batch
    }

    /// Moves `tenant`'s writes into `batch` while its credit covers the next one and the batch has room (a batch
    /// always takes one write, whatever its cost). - Returns: whether it took any, and whether the batch is full
    /// with writes of the tenant left (it goes on first in the next batch).
    private mutating func take(
        from tenant: inout Tenant, into batch: inout [Item], cost: inout Int, maxCount: Int,
        maxCost: Int
    ) -> (took: Bool, full: Bool) {
        var took = false
        while !tenant.isEmpty, batch.count < maxCount {
            let next = tenant.items.first!
            guard next.cost <= tenant.deficit else { break }
            guard batch.isEmpty || cost + next.cost <= maxCost else { return (took, true) }
            batch.append(tenant.items.popFirst()!.item)
            tenant.deficit -= next.cost
            cost += next.cost
            count -= 1
            took = true
        }
        return (took, batch.count >= maxCount && !tenant.isEmpty)
    }
}
