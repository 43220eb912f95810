public import ArgumentParser
import Foundation
import Job
public import Logging
import Postgres
import Storage

/// Options every command that talks to PostgreSQL shares.
struct DatabaseOptions: ParsableArguments {
    @Option(
        name: .customLong("database"),
        help: ArgumentHelp(
            "libpq connection string or URI, without a password.",
            discussion: """
                Default: $CLAWBACK_DATABASE_URL, else $DATABASE_URL, else libpq's own PG* variables and ~/.pgpass. \
                Passwords belong in PGPASSWORD, ~/.pgpass or the environment variables, never on the command line.
                """))
    var database: String?

    @Option(help: "Longest time one SQL statement may run, in seconds (default: the configuration's, else 300).")
    var statementTimeout: Int?

    func validate() throws {
        if let database, PostgresConfiguration.containsPassword(database) {
            throw ValidationError(
                "--database must not contain a password (it would be visible in the process list); "
                    + "use PGPASSWORD, ~/.pgpass or $CLAWBACK_DATABASE_URL")
        }
        if let statementTimeout, statementTimeout <= 0 { throw ValidationError("--statement-timeout must be positive") }
    }

    /// Flags, then the environment, then the configuration file, then libpq's own defaults.
    func configuration(_ settings: ClawbackConfiguration.Database) -> PostgresConfiguration {
        let environment = ProcessInfo.processInfo.environment
        let connectionString = database ?? ClawbackConfiguration.databaseURL(environment: environment, file: settings.url) ?? ""
        var configuration = PostgresConfiguration(
            connectionString: connectionString, statementTimeout: .seconds(statementTimeout ?? settings.statementTimeoutSeconds))
        configuration.password = settings.password
        return configuration
    }

    /// Connects, and refuses a database whose schema is not this binary's. A connection failure is
    /// `DatabaseUnreachable` (exit 69); a database that is not migrated, or was migrated by a newer clawback, a
    /// `SchemaError` (exit 78) naming `clawback migrate`. Only `migrate` itself connects without the check.
    func connect(logger: Logger, _ settings: ClawbackConfiguration.Database, requireSchema: Bool = true) throws -> PostgresConnection {
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection(configuration(settings), logger: logger)
        } catch {
            throw DatabaseUnreachable(error)
        }
        if requireSchema { try Migrator(logger: logger).requireCurrent(on: connection) }
        return connection
    }
}

/// Logging options every command shares.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Least severe log level written to stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel: Logger.Level = .info

    @Option(help: "Log format on stderr: text or json (one object per line).")
    var logFormat: LogFormat = .text

    enum LogFormat: String, ExpressibleByArgument {
        case text, json
    }

    /// Whether the logs are JSON lines: what else the command prints on stdout must then be JSON lines too.
    var logsJSON: Bool { logFormat == .json }

    /// Bootstraps swift-log once for the process and returns the command's logger.
    func makeLogger(label: String) -> Logger {
        let level = logLevel
        let format = logFormat
        // Every logger of the process (the database's, Apple's) gets the chosen level, not just this one.
        LoggingSystem.bootstrap { label in
            if format == .json { return JSONLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = logLevel
        return logger
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// `--config FILE`: the YAML configuration. Default: $CLAWBACK_CONFIG, else ./clawback.yaml when present.
struct ConfigOptions: ParsableArguments {
    @Option(help: "Configuration file (YAML). Default: $CLAWBACK_CONFIG, else ./clawback.yaml if present.")
    var config: String?

    /// The configuration with environment overrides applied; a `ConfigurationErrors` (exit 78) naming every
    /// bad field, said once at the top.
    func load(logger: Logger) throws -> ClawbackConfiguration {
        try loadOrFail()
    }

    /// The configuration, or every problem with it.
    func loadOrFail() throws(ConfigurationErrors) -> ClawbackConfiguration {
        let environment = ProcessInfo.processInfo.environment
        let path = config ?? environment["CLAWBACK_CONFIG"] ?? (FileManager.default.fileExists(atPath: "clawback.yaml") ? "clawback.yaml" : nil)
        var configuration = try path.map { path throws(ConfigurationErrors) in try ClawbackConfiguration.load(path: path) } ?? ClawbackConfiguration()
        configuration.applyEnvironment(environment)
        try configuration.validateFinal()
        try configuration.database.loadPassword()
        return configuration
    }
}
