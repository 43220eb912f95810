import ArgumentParser
import Job
import Logging

struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Check the configuration.", subcommands: [ConfigCheckCommand.self])
}

struct ConfigCheckCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Check everything the jobs need, changing nothing: the file, keys and secrets, directories, the database, each store.",
        usage: "clawback config check [<options>]",
        discussion: """
            Prints one line per item: ok, warn or FAIL with the reason. The file must parse with no unknown field; \
            every app's key file (and database.password_file) must load and be readable by no one but its owner and \
            group; the report and metrics directories \
            must be writable; PostgreSQL must be reachable with every migration applied; Apple (or the simulator) must \
            accept each App Store app's key for a cheap authenticated request; Google Play must give each app's \
            service account a token and let it read the app's voids and orders (and answer chargeback reviews, and \
            pull the notifications' subscription, where google.notifications is set); Stripe must let the web shop's \
            restricted key read each list the runs read (a secret or test-mode key is a warning), changing nothing.

            Exit status: 0 all fine (warnings allowed); 78 anything failed.
            """)

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        var logging = self.logging
        if logging.logLevel.level > .warning { logging.logLevel = .warning }
        let logger = logging.makeLogger(label: "clawback.config")
        try await ConfigurationCheck.run(loading: configOptions.load, database: database.target, logger: logger).emit()
    }
}
