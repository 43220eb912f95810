import ArgumentParser
import Job
import Logging

struct GooglePlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google-play",
        abstract:
            "Google Play: keep its voided purchases before Google forgets them (the monthly `clawback run --strategy google-orders` reads them).",
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
    @Option(help: "Write Prometheus textfile metrics here (atomically): series clawback_google_sweep_….") var metricsFile: String?

    func run() async throws {
        let context = try options.context(label: "clawback.google-play")
        do {
            let outcome = try await GoogleVoidSweep.perform(
                database: context.databaseConfiguration, configuration: context.configuration, logger: context.logger)
            writeMetrics(outcome, succeeded: true, logger: context)
            print(outcome.rendered(json: json, oneLine: options.logging.logsJSON))
        } catch {
            if let outcome = error.outcome {
                writeMetrics(outcome, succeeded: false, logger: context)
                print(outcome.rendered(json: json, oneLine: options.logging.logsJSON))
            }
            throw error
        }
    }

    /// A metrics file that cannot be written is logged, never a failure of the sweep.
    func writeMetrics(_ outcome: GoogleVoidSweep.Outcome, succeeded: Bool, logger context: CommandContext) {
        guard let metricsFile else { return }
        do {
            try MetricsFile.writeSweep(to: metricsFile, outcome: outcome, succeeded: succeeded)
        } catch {
            context.logger.error("cannot write the metrics file", metadata: ["path": "\(metricsFile)", "error": "\(error)"])
        }
    }
}
