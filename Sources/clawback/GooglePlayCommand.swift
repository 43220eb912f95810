import ArgumentParser
import GooglePlayDriver
import Job

struct GooglePlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "google-play",
        abstract:
            "Google Play: keep its voided purchases before Google forgets them; read its real-time notifications and answer its chargeback reviews.",
        subcommands: [GooglePlaySweepVoidsCommand.self, GooglePlayNotificationsCommand.self])
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
        try await ScheduledJobCommand.run(
            { () async throws(GoogleVoidSweep.Failure) in
                try await GoogleVoidSweep.perform(
                    database: context.databaseConfiguration, configuration: context.configuration, logger: context.logger)
            }, render: { $0.rendered(json: json, oneLine: options.logging.logsJSON) }, metricsFile: metricsFile,
            writeMetrics: { try await MetricsFile.writeSweep(to: $0, outcome: $1, succeeded: $2) }, context: context)
    }
}

struct GooglePlayNotificationsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "notifications",
        abstract: "The hourly job: read Google Play's real-time notifications from Pub/Sub and answer each chargeback review once.",
        usage: "clawback google-play notifications [<options>]",
        discussion: """
            Pulls google.notifications.subscription until it is empty, keeps each message once in clawback.google_notifications \
            (with what it means: a void the next Google daily run checks, a chargeback review to answer, a test) and \
            acknowledges only what was kept. A message that cannot be read, or about an app not under google_apps, is kept \
            for a person. Then answers each open chargeback review with orders.reviewrefund before its 24-hour deadline, by the \
            policy in docs/google-play.md: the answer is decided once and stored before it is sent, and that one answer is sent \
            again until Google takes it (Google keeps the first). A review whose facts the game's hooks cannot give is set aside \
            and tried again next run. --dry-run prints what each review would be answered, changing nothing.

            Exit status: 0 done, nothing left; 75 reviews are still unanswered, the subscription was not read to its end, or \
            kept messages were not acknowledged: the next hourly run goes on; 69 the database is unreachable; 78 configuration \
            (no google.notifications, an unusable key file), or the database not migrated or migrated by a newer clawback; 85 \
            another `google-play notifications` is running. Reviews that can never be answered, refused or expired ones are \
            counted, not an exit status.
            """)

    @OptionGroup var options: CommandOptions
    @Flag(help: "Print the summary as JSON.") var json = false
    @Option(help: "Write Prometheus textfile metrics here (default: google.notifications.metrics_file): series clawback_google_notifications_….")
    var metricsFile: String?
    @Flag(
        help:
            "Print each review's answer as the run would send it, changing nothing: no message kept or acknowledged (what it pulls it hands back), no answer stored or sent, no metrics written."
    )
    var dryRun = false

    func run() async throws {
        let context = try options.context(label: "clawback.google-play")
        if dryRun {
            let preview = try await GoogleNotificationsPreview.perform(
                database: context.databaseConfiguration, configuration: context.configuration, logger: context.logger)
            print(preview.rendered(json: json, oneLine: options.logging.logsJSON))
            return
        }
        try await ScheduledJobCommand.run(
            { () async throws(GoogleNotificationsRun.Failure) in
                try await GoogleNotificationsRun.perform(
                    database: context.databaseConfiguration, configuration: context.configuration, logger: context.logger)
            }, render: { $0.rendered(json: json, oneLine: options.logging.logsJSON) },
            metricsFile: metricsFile ?? context.configuration.google.notifications?.metricsFile,
            writeMetrics: { try await MetricsFile.writeGoogleNotifications(to: $0, outcome: $1, succeeded: $2) }, context: context)
    }
}
