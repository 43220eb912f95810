package import Postgres

/// Where the database is and how long a statement may take: what a job or a command opens its connections
/// with. The libpq settings behind it stay in Storage.
public struct DatabaseConfiguration: Sendable {
    package var postgres: PostgresConfiguration

    package init(_ postgres: PostgresConfiguration) { self.postgres = postgres }

    /// `connectionString` is a libpq connection string or URI; empty means libpq's own defaults (the `PG*`
    /// environment variables, `~/.pgpass`, the service file), as for `psql`.
    public init(connectionString: String, statementTimeout: Duration) {
        postgres = PostgresConfiguration(connectionString: connectionString, statementTimeout: statementTimeout)
    }

    /// The password read from a file clawback was pointed at (it overrides the connection string's).
    public var password: String? {
        get { postgres.password }
        set { postgres.password = newValue }
    }

    /// Reported to the server as `application_name` unless the connection string names one.
    public var applicationName: String {
        get { postgres.applicationName }
        set { postgres.applicationName = newValue }
    }

    /// Whether a connection string carries a password, which would be visible in the process list.
    public static func containsPassword(_ connectionString: String) -> Bool {
        PostgresConfiguration.containsPassword(connectionString)
    }
}
