extension SQLitePushStore {
    /// The schema version this program writes (`PRAGMA user_version` after migrating), for the store move's check
    /// that both ends are at the same schema.
    package static var newestSchemaVersion: Int { Schema.migrations.count }
}
