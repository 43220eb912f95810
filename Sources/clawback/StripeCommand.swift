import ArgumentParser
import Job
import StripeDriver

struct StripeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stripe",
        abstract: "Stripe (a web shop's payments): answer its disputes with the game's evidence.",
        subcommands: [StripeDisputesCommand.self])
}

struct StripeDisputesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disputes",
        abstract: "The hourly job: answer the web shop's open Stripe disputes with the game's evidence, each submitted once.",
        usage: "clawback stripe disputes [<options>]",
        discussion: """
            Reads the disputes of the last 60 days, records each one awaiting the studio's response once \
            (clawback.stripe_disputes), decides its evidence from the game's grant and hooks (clawback.units_consumed, \
            clawback.usage_events), stores it, stages it (submit=false) and submits it (submit=true) before its due_by, \
            each POST under an Idempotency-Key derived from the dispute. A purchase the game has no grant of, a dispute the \
            issuer allows no response to, or one too near its deadline is left, with why. No dispute is ever accepted \
            (docs/stripe.md, "Disputes answered").

            Exit status: 0 every dispute moved as far as it goes; 75 a dispute's facts or a POST failed (the next run goes on \
            with it); 69 the database or Stripe unreachable; 77 the database role lacks a privilege; 78 configuration (no \
            stripe section, an unusable key file), or the database not migrated or migrated by a newer clawback; 85 another \
            `clawback stripe disputes` is running.
            """)

    @OptionGroup var options: CommandOptions
    @Flag(help: "Print the summary as JSON.") var json = false
    @Option(help: "Write Prometheus textfile metrics here (atomically): series clawback_stripe_disputes_….") var metricsFile: String?

    func run() async throws {
        let context = try options.context(label: "clawback.stripe")
        try await ScheduledJobCommand.run(
            { () async throws(StripeDisputesRun.Failure) in
                try await StripeDisputesRun.perform(
                    database: context.databaseConfiguration, configuration: context.configuration, logger: context.logger)
            }, render: { $0.rendered(json: json, oneLine: options.logging.logsJSON) }, metricsFile: metricsFile,
            writeMetrics: { try await MetricsFile.writeStripeDisputes(to: $0, outcome: $1, succeeded: $2) }, context: context)
    }
}
