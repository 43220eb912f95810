public import ArgumentParser
import Foundation
import Job
import Logging
import Reconciliation

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The monthly reconciliation: re-verify granted purchases with their store (App Store, Google Play, Stripe) and claw back refunds.",
        usage: "clawback run [<options>]",
        discussion: """
            Default window: the three calendar months before the current one (UTC; run.window_months). Every run \
            writes a row in clawback.runs and one check per grant; ledger entries are written at most once, however \
            often the job is rerun or resumed. A killed or interrupted run is resumed by the next invocation for the same scope.

            Every run writes its reports (detail and summary CSV, HTML summary) to the report directory once its \
            database work is committed; `clawback report --run RUN` writes them again (with --as-of the run's \
            `ledger_as_of`, identically).

            Exit status: 0 done; 75 done with unverified grants, or interrupted (rerun to finish); 69 the database or \
            the store (Apple, Google, Stripe) unreachable, or the run is done but could not be marked so (the next run writes its reports again); \
            73 the reports could not be written (the run itself is committed); 78 configuration, or the database not \
            migrated (run `clawback migrate`) or migrated by a newer clawback; 85 another run holds the lock for this \
            scope; 64 usage.
            """)

    @OptionGroup var options: CommandOptions
    @OptionGroup var reportFlags: ReportFlags

    @Option(help: "One calendar month, YYYY-MM.") var month: String?
    @Option(help: "Window start (YYYY-MM-DD or RFC 3339), with --to.") var from: String?
    @Option(help: "Window end, exclusive.") var to: String?
    @Option(help: "Only this bundle id, Google Play package name (--strategy google-orders) or web shop (--strategy stripe-payments); repeatable.")
    var bundle: [String] = []
    @Option(help: "Only this player.") var player: String?
    @Option(help: "Only this transaction id (a Google Play grant's: its purchase token; a Stripe grant's: its PaymentIntent).")
    var transaction: String?
    @Option(
        help:
            "transaction-info (complete; the default), notifications (fast: Apple calls scale with refunds), customer-history (per Apple account: calls scale with accounts), receipt (legacy verifyReceipt for grants that kept a receipt), notified-refunds (only what the refund feed names since the last such run: the daily run), google-orders (Google Play's grants, each order's statement from Google's Orders API), google-voided-orders (only the orders of the voids the sweep kept since the last such run: Google Play's daily run, as --daily --strategy google-orders), stripe-payments (a web shop's Stripe payments: the window's charges, refunds and disputes listed), or stripe-events (only the payments Stripe's events name since the last such run: Stripe's daily run, as --daily --strategy stripe-payments)."
    )
    var strategy: RunStrategy = .transactionInfo
    @Option(help: "notifications strategy: percent of grants re-verified per transaction to measure missed notifications.")
    var auditSample = 1.0
    @Option(help: "This shard, I/N: transactions whose md5 hash modulo N is I.") var shard: String?
    @Option(help: "Number of shards, the index coming from $JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs).") var shards: Int?
    @Flag(
        help:
            "The daily run, checking only the purchases the store's refunds name since the last daily run: the App Store's refund feed (notified-refunds), with --strategy google-orders the voids Google Play's sweep kept, with --strategy stripe-payments Stripe's events. One run per window that still holds kept grants, the next monthly run's last."
    )
    var daily = false
    @Flag(help: "Check and report, but write no ledger entry.") var dryRun = false
    @Option(help: "Continue this run.") var resume: Int64?
    @Option(help: "Write Prometheus textfile metrics here (atomically).") var metricsFile: String?
    @Option(help: "Verifications in flight at once.") var concurrency: Int?
    @Option(help: "Checks per database transaction.") var batchSize: Int?
    @Flag(help: "Print the summary as JSON.") var json = false

    func validate() throws {
        if month != nil && (from != nil || to != nil) { throw ValidationError("give --month or --from/--to, not both") }
        if (from == nil) != (to == nil) { throw ValidationError("--from and --to go together") }
        if shard != nil && shards != nil { throw ValidationError("give --shard I/N or --shards N, not both") }
        guard (0...100).contains(auditSample) else { throw ValidationError("--audit-sample is a percentage from 0 to 100") }
        if let concurrency, !(1...1024).contains(concurrency) { throw ValidationError("--concurrency must be between 1 and 1024") }
        if daily {
            if month != nil || from != nil {
                throw ValidationError("--daily chooses its windows (every kept grant's, the next monthly run's last): no --month, --from or --to")
            }
            if player != nil || transaction != nil {
                throw ValidationError("--daily checks what the refund feed names: no --player or --transaction")
            }
            // A store's daily run: named by its monthly default (`--daily --strategy google-orders`) or its own name.
            let store = StoreCatalog.description(of: strategy.store)
            guard store?.dailyStrategy != nil, strategy.isDaily || strategy == store?.monthlyStrategy else {
                let choices = StoreCatalog.descriptions.compactMap { store in
                    store.dailyStrategy.map { "\(store.displayName)'s (\(store.monthlyStrategy?.rawValue ?? $0.rawValue) or \($0.rawValue))" }
                }
                throw ValidationError("--daily is a store's daily run, " + choices.joined(separator: ", ") + ": not \(strategy.rawValue)")
            }
        }
    }

    func window(now: Date, months: Int) throws -> ReconciliationWindow {
        if daily { return ReconciliationWindow.nextMonthly(after: now, months: months) }
        do {
            if let month { return try ReconciliationWindow.month(month) }
            if let from, let to {
                return try ReconciliationWindow(start: try ReconciliationWindow.date(from), end: try ReconciliationWindow.date(to))
            }
            return ReconciliationWindow.monthsBefore(now, months: months)
        } catch {
            throw ValidationError(error.description)
        }
    }

    func shardSpec() throws -> (index: Int, count: Int) {
        if let shard {
            let parts = shard.split(separator: "/")
            guard parts.count == 2, let index = Int(parts[0]), let count = Int(parts[1]), count >= 1, (0..<count).contains(index) else {
                throw ValidationError("--shard takes I/N with 0 <= I < N, e.g. 0/4")
            }
            return (index, count)
        }
        if let shards {
            guard shards >= 1 else { throw ValidationError("--shards must be at least 1") }
            guard let text = ProcessInfo.processInfo.environment["JOB_COMPLETION_INDEX"], let index = Int(text), (0..<shards).contains(index) else {
                throw ValidationError("--shards needs $JOB_COMPLETION_INDEX between 0 and \(shards - 1)")
            }
            return (index, shards)
        }
        return (0, 1)
    }

    func run() async throws {
        let context = try options.context(label: "clawback.run")
        let (configuration, logger) = (context.configuration, context.logger)
        let (shardIndex, shardCount) = try shardSpec()
        let request = MonthlyRun.Request(
            window: try window(now: Date(), months: configuration.run.windowMonths), bundleIDs: bundle, playerID: player,
            transactionID: transaction, shardIndex: shardIndex, shardCount: shardCount, strategy: daily ? (strategy.daily ?? strategy) : strategy,
            dryRun: dryRun,
            resumeRunID: resume, concurrency: concurrency, batchSize: batchSize, auditShare: auditSample / 100, metricsFile: metricsFile,
            reports: reportFlags.choices, triggeredBy: Self.user(), host: ProcessInfo.processInfo.hostName,
            arguments: Array(CommandLine.arguments.dropFirst()), context: context)
        let stop = StopSignal()
        stop.install { signal in
            logger.notice("stopping at the next batch boundary; send the signal again to stop at once", metadata: ["signal": "\(signal)"])
        }
        if daily {
            let windows = ReconciliationWindow.dailyWindows(
                after: Date(), months: configuration.run.windowMonths,
                retentionMonths: configuration.tailWindow.grantRetention(windowMonths: configuration.run.windowMonths))
            let outcome = await DailyRun.perform(
                request, windows: windows, configuration: configuration, logger: logger, progress: ProgressReporter(logger: logger), stop: stop)
            for pass in outcome.passes { print(summary(pass)) }
            if let failure = outcome.failure { throw failure }
            return
        }
        do {
            let outcome = try await MonthlyRun.perform(
                request, configuration: configuration, logger: logger, progress: ProgressReporter(logger: logger), stop: stop)
            print(summary(outcome))
        } catch {
            // Once the run has committed, its summary is printed whatever failed after it.
            if let outcome = error.outcome { print(summary(outcome)) }
            throw error
        }
    }

    func summary(_ outcome: MonthlyRun.Outcome) -> String {
        RunSummary.render(outcome, dryRun: dryRun, json: json, oneLine: options.logging.logsJSON)
    }

    static func user() -> String {
        let environment = ProcessInfo.processInfo.environment
        return environment["CLAWBACK_TRIGGERED_BY"] ?? environment["USER"] ?? environment["LOGNAME"] ?? "uid \(getuid())"
    }
}

extension RunStrategy: ExpressibleByArgument {
    /// Every registered store's strategies, for completion and for the choices a bad value is told.
    static var allValueStrings: [String] { StoreCatalog.strategies.map(\.rawValue) }
}
