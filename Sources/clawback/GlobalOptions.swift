import ArgumentParser
import Foundation
import Job
import Logging

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
        if let database, DatabaseTarget.containsPassword(database) {
            throw ValidationError(
                "--database must not contain a password (it would be visible in the process list); "
                    + "use PGPASSWORD, ~/.pgpass or $CLAWBACK_DATABASE_URL")
        }
        if let statementTimeout, statementTimeout <= 0 { throw ValidationError("--statement-timeout must be positive") }
    }

    var target: DatabaseTarget { DatabaseTarget(connectionString: database, statementTimeoutSeconds: statementTimeout) }
}

/// The options of every command that works on the database (`--config`, `--database`, the logging), and the
/// one preamble they share: bootstrap the logs, load the configuration, say where the database is.
struct CommandOptions: ParsableArguments {
    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func context(label: String) throws -> CommandContext {
        let logger = logging.makeLogger(label: label)
        return CommandContext(configuration: try configOptions.load(), database: database.target, logger: logger)
    }
}

/// Logging options every command shares.
struct LoggingOptions: ParsableArguments {
    @Option(help: "Least severe log level written to stderr: trace, debug, info, notice, warning, error, critical.")
    var logLevel: LogLevel = .info

    @Option(help: "Log format on stderr: text or json (one object per line).")
    var logFormat: LogFormat = .text

    enum LogFormat: String, ExpressibleByArgument {
        case text, json
    }

    /// Whether the logs are JSON lines: what else the command prints on stdout must then be JSON lines too.
    var logsJSON: Bool { logFormat == .json }

    /// Bootstraps swift-log once for the process and returns the command's logger.
    func makeLogger(label: String) -> Logger {
        let level = logLevel.level
        let format = logFormat
        // Every logger of the process (the database's, Apple's) gets the chosen level, not just this one.
        LoggingSystem.bootstrap { label in
            if format == .json { return JSONLogHandler(label: label, level: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        var logger = Logger(label: label)
        logger.logLevel = logLevel.level
        return logger
    }
}

/// swift-log's levels as the command line names them (its own type is not ours to make an argument of).
enum LogLevel: String, CaseIterable, ExpressibleByArgument {
    case trace
    case debug
    case info
    case notice
    case warning
    case error
    case critical

    var level: Logger.Level { Logger.Level(rawValue: rawValue) ?? .info }
}

/// `--config FILE`: the YAML configuration. Default: $CLAWBACK_CONFIG, else ./clawback.yaml when present.
struct ConfigOptions: ParsableArguments {
    @Option(help: "Configuration file (YAML). Default: $CLAWBACK_CONFIG, else ./clawback.yaml if present.")
    var config: String?

    /// The configuration with environment overrides applied, or a `ConfigurationErrors` (exit 78) naming
    /// every bad field, said once at the top.
    func load() throws(ConfigurationErrors) -> ClawbackConfiguration {
        let environment = ProcessInfo.processInfo.environment
        let path = config ?? environment["CLAWBACK_CONFIG"] ?? (FileManager.default.fileExists(atPath: "clawback.yaml") ? "clawback.yaml" : nil)
        var configuration = try path.map { path throws(ConfigurationErrors) in try ClawbackConfiguration.load(path: path) } ?? ClawbackConfiguration()
        configuration.applyEnvironment(environment)
        try configuration.validateFinal()
        try configuration.database.loadPassword()
        return configuration
    }
}
