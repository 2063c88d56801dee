import CLinux
import Foundation

/// The process's memory as the kernel and the C allocator see it, for `/metrics`.
///
/// RSS alone cannot tell live data from memory `malloc` keeps after a `free` (glibc returns the top of a heap to
/// the kernel, not holes in the middle); the heap gauges split it, so a slow rise in RSS reads as either a growing
/// data structure (`inUse` grows) or fragmentation (`free` grows).
struct ProcessMemory: Equatable {
    /// Resident set size in bytes (`/proc/self/statm`, second field, times the page size).
    var residentBytes: Int
    /// Bytes handed out by `malloc` from its arenas and not freed (`mallinfo2`: `uordblks`).
    var heapInUseBytes: Int
    /// Bytes in blocks large enough that `malloc` maps each on its own (`mallinfo2`: `hblkhd`); counted whole,
    /// though only the touched pages are resident.
    var heapMappedBytes: Int
    /// Bytes `malloc` holds free inside its arenas (`mallinfo2`: `fordblks`): memory the process keeps but does
    /// not use.
    var heapFreeBytes: Int

    /// Reads the current figures. `mallinfo2` walks every arena under its lock: cheap at a scrape's pace, not per
    /// request.
    static func current() -> ProcessMemory {
        let info = mallinfo2()
        return ProcessMemory(
            residentBytes: residentPages().map { $0 * Int(sysconf(Int32(_SC_PAGESIZE))) } ?? 0,
            heapInUseBytes: Int(info.uordblks),
            heapMappedBytes: Int(info.hblkhd),
            heapFreeBytes: Int(info.fordblks))
    }

    /// The second field of `/proc/self/statm`; nil where there is no procfs.
    static func residentPages(statm: String? = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) -> Int?
    {
        guard let statm else { return nil }
        let fields = statm.split(separator: " ")
        return fields.count > 1 ? Int(fields[1]) : nil
    }
}
