import AppStoreDriver
import ArgumentParser
import Job

struct RefundRequestsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refund-requests",
        abstract: "Answer Apple's refund requests (CONSUMPTION_REQUEST) with the game's facts, within Apple's 12 hours; show one.",
        subcommands: [RefundRequestsAnswerCommand.self, RefundRequestsShowCommand.self])
}

struct RefundRequestsAnswerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "answer",
        abstract: "The hourly job: read new refund requests and Apple's decisions, and answer every consented request once.",
        usage: "clawback refund-requests answer [<options>]",
        discussion: """
            Reads Get Notification History (CONSUMPTION_REQUEST, REFUND, REFUND_DECLINED) of every configured app and \
            environment from its cursor (less refund_requests.overlap_minutes; the first time refund_requests.lookback_hours \
            back), verifies each notification, records each request once (by notificationUUID), joins Apple's decisions, \
            and answers each request of an app with customer_consented: true with Send Consumption Information. Answers \
            follow the policy in docs/refund-requests.md; nothing is sent after a request's 12-hour deadline.

            Exit status: 0 done, nothing left open; 75 requests are still unanswered (Apple's errors, a hook error) \
            or a feed was not read whole: the next hourly run retries; 69 the database is unreachable; 78 \
            configuration (app_apple_id missing), or the database not migrated or migrated by a newer clawback; 85 another `refund-requests answer` is running. Requests that can never be answered \
            (delivery unknown, consent withdrawn) and expired ones are counted, not an exit status. --dry-run prints what \
            each request would be answered, changing nothing.
            """)

    @OptionGroup var options: CommandOptions
    @Option(help: "Write Prometheus textfile metrics here (default: refund_requests.metrics_file).") var metricsFile: String?
    @Flag(help: "Print the summary as JSON.") var json = false
    @Flag(
        help:
            "Print each request's answer as the job would send it (from the feeds and the open requests), changing nothing: nothing recorded, stored or sent, no cursor moved, no metrics written."
    )
    var dryRun = false

    func run() async throws {
        let context = try options.context(label: "clawback.refund-requests")
        if dryRun {
            let preview = try await RefundRequestsPreview.perform(
                database: context.databaseConfiguration, configuration: context.configuration, logger: context.logger)
            print(preview.rendered(json: json, oneLine: options.logging.logsJSON))
            return
        }
        let request = RefundRequestRun.Request(metricsFile: metricsFile, context: context)
        do {
            let outcome = try await RefundRequestRun.perform(request, configuration: context.configuration, logger: context.logger)
            print(RefundRequestSummary.render(outcome, json: json, oneLine: options.logging.logsJSON))
        } catch {
            if let outcome = error.outcome { print(RefundRequestSummary.render(outcome, json: json, oneLine: options.logging.logsJSON)) }
            throw error
        }
    }
}

struct RefundRequestsShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "One refund request (by notificationUUID) or every request of a transaction, with the answer sent.",
        usage: "clawback refund-requests show [<options>] <key>")

    @OptionGroup var options: CommandOptions
    @Argument(help: "A notificationUUID, or a transaction id (all its requests).") var key: String
    @Flag(help: "Print JSON (one array).") var json = false

    func run() async throws {
        print(try RefundRequestLookup.show(key, json: json, try options.context(label: "clawback.refund-requests")))
    }
}
