import ArgumentParser
import Job

struct GooglePlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google-play",
        abstract: "Google Play: keep its voided purchases before Google forgets them (runs check App Store grants only, so far).",
        subcommands: [GooglePlaySweepVoidsCommand.self])
}

struct GooglePlaySweepVoidsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sweep-voids",
        abstract: "The daily job: read each Google Play app's voided purchases since its cursor and keep each once.",
        usage: "clawback google-play sweep-voids [<options>]",
        discussion: """
            Reads purchases.voidedpurchases.list of every app under google_apps, the whole 30 days Google keeps, every page, \
            and keeps each void once in clawback.google_voided_purchases, moving the app's cursor in the same transaction. \
            An app not swept for longer than 30 days has its gap recorded and reported.

            Exit status: 0 every app read whole; 75 an app's feed was not read whole or held rows clawback cannot use (its \
            cursor stays, usable rows are kept: the next sweep reads it again); 69 the database is unreachable; 78 configuration (no google_apps, an unusable key file), or \
            the database not migrated or migrated by a newer clawback; 85 another sweep is running.
            """)

    @OptionGroup var options: CommandOptions
    @Flag(help: "Print the summary as JSON.") var json = false

    func run() async throws {
        let context = try options.context(label: "clawback.google-play")
        do {
            let outcome = try await GoogleVoidSweep.perform(
                database: context.databaseConfiguration, configuration: context.configuration, logger: context.logger)
            print(outcome.rendered(json: json, oneLine: options.logging.logsJSON))
        } catch {
            if let outcome = error.outcome { print(outcome.rendered(json: json, oneLine: options.logging.logsJSON)) }
            throw error
        }
    }
}
