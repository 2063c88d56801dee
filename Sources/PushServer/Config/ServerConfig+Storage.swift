import Foundation
import JSON
import PostgreSQLStore

// `storage.backend` and `storage.postgresql`.
extension ServerConfig {
    static func readStorageBackend(
        _ storage: [String: JSONValue], into config: inout Storage, _ reader: inout ConfigReader,
        environment: [String: String]
    ) {
        if let name = reader.string(storage, "backend", "storage") {
            if let backend = StorageBackend(rawValue: name.lowercased()) {
                config.backend = backend
            } else {
                reader.error("storage.backend", "must be \"sqlite\" or \"postgresql\", got \"\(name)\"")
            }
        }
        let section = reader.object(storage["postgresql"], "storage.postgresql")
        guard config.backend == .postgresql else {
            if section != nil { reader.warning("storage.postgresql", "ignored: storage.backend is \"sqlite\"") }
            return
        }
        guard let section else {
            reader.error(
                "storage.postgresql",
                "is required when storage.backend is \"postgresql\" (give "
                    + "connectionString, connectionStringEnv or connectionStringFile)")
            return
        }
        reader.checkKeys(
            section, "storage.postgresql",
            allowed: [
                "connectionString", "connectionStringEnv", "connectionStringFile", "poolSize", "shardSize",
            ])
        let poolSize = reader.int(section, "poolSize", "storage.postgresql", in: 1...64)
        var shardSize = reader.int(section, "shardSize", "storage.postgresql", in: 0...10_000_000)
        if let size = shardSize, (1..<100).contains(size) {
            reader.error(
                "storage.postgresql.shardSize", "must be 0 (deliver every publish whole) or at least 100, got \(size)")
            shardSize = nil
        }
        guard
            let connectionString = readSecret(
                section, "storage.postgresql", .postgreSQL, &reader, environment: environment)
        else { return }
        // libpq's own parser; its message is not shown, since it quotes parts of the string (a password).
        guard PostgreSQLPushStore.isValidConnectionString(connectionString) else {
            reader.error(
                "storage.postgresql.connectionString",
                "is not a valid libpq connection string (key=value pairs "
                    + "such as \"host=db.internal dbname=push user=push sslmode=verify-full\", or a postgresql:// URI)")
            return
        }
        var postgresql = PostgreSQLStorage(connectionString: connectionString)
        if let poolSize { postgresql.poolSize = poolSize }
        if let shardSize { postgresql.shardSize = shardSize }
        config.postgresql = postgresql
    }
}
