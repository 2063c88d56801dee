import CSQLite

/// What the SQLite library holds in memory, across every connection of the process: page caches, prepared
/// statements, schemas. Read for `/metrics`, so a growing RSS can be told apart from the database's caches.
package enum SQLiteMemory {
    /// Bytes SQLite has allocated and not freed (`sqlite3_memory_used`).
    package static var bytesInUse: Int { Int(sqlite3_memory_used()) }

    /// The most `bytesInUse` has been since the process started (`sqlite3_memory_highwater`, not reset).
    package static var highWaterBytes: Int { Int(sqlite3_memory_highwater(0)) }
}
