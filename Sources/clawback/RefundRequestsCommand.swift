import ArgumentParser
import Foundation
import Job
import Postgres
import Storage

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
            (delivery unknown, consent withdrawn) and expired ones are counted, not an exit status.
            """)

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Option(help: "Write Prometheus textfile metrics here (default: refund_requests.metrics_file).") var metricsFile: String?
    @Flag(help: "Print the summary as JSON.") var json = false

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.refund-requests")
        let configuration = try configOptions.load(logger: logger)
        let request = RefundRequestRun.Request(database: database.configuration(configuration.database), metricsFile: metricsFile)
        do {
            let outcome = try await RefundRequestRun.perform(request, configuration: configuration, logger: logger)
            print(summary(outcome))
        } catch {
            if let outcome = error.outcome { print(summary(outcome)) }
            throw error
        }
    }

    /// As `clawback run`'s: with `--log-format json` one JSON line, so the job's log holds only JSON lines.
    func summary(_ outcome: RefundRequestRun.Outcome) -> String {
        if json || logging.logsJSON {
            let encoder = JSONEncoder()
            encoder.outputFormatting = logging.logsJSON ? [.sortedKeys] : [.sortedKeys, .prettyPrinted]
            return String(decoding: (try? encoder.encode(outcome)) ?? Data(), as: UTF8.self)
        }
        return TextTable.render(
            [
                ["notifications read", String(outcome.notificationsRead)],
                ["rejected (failed verification)", String(outcome.rejectedNotifications)],
                ["feeds not read whole", String(outcome.feedsNotWhole)],
                ["new refund requests", String(outcome.newRequests)],
                ["Apple decisions joined", String(outcome.decisionsJoined)],
                ["answered", "\(outcome.answered) (sent again after an interruption: \(outcome.resent))"],
                ["refused by Apple", String(outcome.refusedByApple)],
                ["cannot be answered", String(outcome.unanswerable)],
                ["waiting (no grant yet)", String(outcome.waiting)],
                ["not answered this time", String(outcome.notAnswered)],
                ["expired unanswered", String(outcome.expired)],
                [
                    "still open",
                    String(outcome.open) + (outcome.open > 0 ? String(format: " (oldest %.0f min)", outcome.oldestOpenAgeSeconds / 60) : ""),
                ],
                ["Apple requests", String(outcome.appleRequests)],
            ].map { [$0[0], $0[1]] })
    }
}

struct RefundRequestsShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "One refund request (by notificationUUID) or every request of a transaction, with the answer sent.",
        usage: "clawback refund-requests show [<options>] <key>")

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Argument(help: "A notificationUUID, or a transaction id (all its requests).") var key: String
    @Flag(help: "Print JSON (one array).") var json = false

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.refund-requests")
        let configuration = try configOptions.load(logger: logger)
        let connection = try database.connect(logger: logger, configuration.database)
        let requests = try RefundRequestStore.show(key, on: connection)
        guard !requests.isEmpty else {
            FileHandle.standardError.write(Data("clawback: no refund request has notificationUUID or transaction id \(key)\n".utf8))
            throw ExitCodes.noInput
        }
        if json {
            let objects = requests.map { Dictionary($0, uniquingKeysWith: { first, _ in first }) }
            let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .prettyPrinted])) ?? Data()
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(requests.map { TextTable.render($0.map { [$0.0, $0.1] }) }.joined(separator: "\n\n"))
        }
    }
}
