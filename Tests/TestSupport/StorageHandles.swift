public import Postgres
public import Storage

// The tests reach the database two ways: as Storage's operations take it (these handles), and with their
// own SQL on the libpq connection, to set a scene up or to check what Storage wrote behind its back.
extension PostgresConnection {
    /// This connection as Storage's operations take it.
    public var storage: DatabaseConnection { DatabaseConnection(self) }
}

extension PostgresConfiguration {
    /// These settings as Storage's sessions and the jobs take them.
    public var storage: DatabaseConfiguration { DatabaseConfiguration(self) }
}
