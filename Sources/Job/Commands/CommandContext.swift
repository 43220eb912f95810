import Foundation
public import Logging
public import Storage

/// Where the database is, as the command line gave it: `--database` and `--statement-timeout`, each
/// optional. The configuration and the environment fill in the rest (`configuration(_:)`).
public struct DatabaseTarget: Sendable {
    public var connectionString: String?
    public var statementTimeoutSeconds: Int?

    public init(connectionString: String? = nil, statementTimeoutSeconds: Int? = nil) {
        self.connectionString = connectionString
        self.statementTimeoutSeconds = statementTimeoutSeconds
    }

    /// Whether a connection string carries a password, which would be visible in the process list.
    public static func containsPassword(_ connectionString: String) -> Bool {
        DatabaseConfiguration.containsPassword(connectionString)
    }

    /// Flags, then the environment, then the configuration file, then libpq's own defaults.
    public func configuration(_ settings: ClawbackConfiguration.Database) -> DatabaseConfiguration {
        let environment = ProcessInfo.processInfo.environment
        let connectionString = connectionString ?? ClawbackConfiguration.databaseURL(environment: environment, file: settings.url) ?? ""
        var configuration = DatabaseConfiguration(
            connectionString: connectionString, statementTimeout: .seconds(statementTimeoutSeconds ?? settings.statementTimeoutSeconds))
        configuration.password = settings.password
        return configuration
    }
}

/// What every command that talks to PostgreSQL starts from: its configuration, where the database is, and
/// its logger. The command line builds one from its options; the operations in this folder take it.
public struct CommandContext: Sendable {
    public var configuration: ClawbackConfiguration
    public var database: DatabaseTarget
    public var logger: Logger

    public init(configuration: ClawbackConfiguration, database: DatabaseTarget, logger: Logger) {
        self.configuration = configuration
        self.database = database
        self.logger = logger
    }

    /// The connection settings this command uses.
    public var databaseConfiguration: DatabaseConfiguration { database.configuration(configuration.database) }

    /// Connects, and refuses a database whose schema is not this binary's. A connection failure is
    /// `DatabaseUnreachable` (exit 69); a database that is not migrated, or was migrated by a newer clawback, a
    /// `SchemaError` (exit 78) naming `clawback migrate`. Only `migrate` itself connects without the check.
    func connect(requireSchema: Bool = true) throws -> DatabaseConnection {
        let connection: DatabaseConnection
        do {
            connection = try DatabaseConnection.open(databaseConfiguration, logger: logger)
        } catch {
            throw DatabaseUnreachable(error)
        }
        if requireSchema { try Migrator(logger: logger).requireCurrent(on: connection) }
        return connection
    }
}
