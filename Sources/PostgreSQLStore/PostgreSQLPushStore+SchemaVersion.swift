extension PostgreSQLPushStore {
    /// The schema version this program writes (the newest `schema_migrations` entry after migrating), for the store
    /// move's check that both ends are at the same schema.
    package static var newestSchemaVersion: Int { PostgreSQLSchema.migrations.count }
}
