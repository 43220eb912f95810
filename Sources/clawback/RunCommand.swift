import AppStore
public import ArgumentParser
import CrashPoints
import Foundation
import HTTP
import Job
import Logging
import Postgres
import Reconciliation
import Reports
import Storage

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "The monthly reconciliation: re-verify granted purchases with Apple and claw back refunds.",
        usage: "clawback run [<options>]",
        discussion: """
            Default window: the three calendar months before the current one (UTC; run.window_months). Every run \
            writes a row in clawback.runs and one check per grant; ledger entries are written at most once, however \
            often the job is rerun or resumed. A killed or interrupted run is resumed by the next invocation for the same scope.

            Every run writes its reports (detail and summary CSV, HTML summary) to the report directory once its \
            database work is committed; `clawback report --run RUN` writes them again, identically.

            Exit status: 0 done; 75 done with unverified grants, or interrupted (rerun to finish); 69 database or \
            Apple unreachable; 73 the reports could not be written (the run itself is committed); 78 configuration; \
            85 another run holds the lock for this scope; 64 usage.
            """)

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @OptionGroup var reportFlags: ReportFlags

    @Option(help: "One calendar month, YYYY-MM.") var month: String?
    @Option(help: "Window start (YYYY-MM-DD or RFC 3339), with --to.") var from: String?
    @Option(help: "Window end, exclusive.") var to: String?
    @Option(help: "Only this bundle id (repeatable).") var bundle: [String] = []
    @Option(help: "Only this player.") var player: String?
    @Option(help: "Only this transaction id.") var transaction: String?
    @Option(
        help:
            "transaction-info (complete; the default), notifications (fast: Apple calls scale with refunds), customer-history (per Apple account: calls scale with accounts), or receipt (legacy verifyReceipt for grants that kept a receipt)."
    )
    var strategy: RunStrategy = .transactionInfo
    @Option(help: "notifications strategy: percent of grants re-verified per transaction to measure missed notifications.")
    var auditSample = 1.0
    @Option(help: "This shard, I/N: transactions whose md5 hash modulo N is I.") var shard: String?
    @Option(help: "Number of shards, the index coming from $JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs).") var shards: Int?
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
    }

    func window(now: Date, months: Int) throws -> ReconciliationWindow {
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
        let logger = logging.makeLogger(label: "clawback.run")
        let configuration = try configOptions.load(logger: logger)
        let (shardIndex, shardCount) = try shardSpec()
        let selection = GrantSelection(
            window: try window(now: Date(), months: configuration.run.windowMonths), bundleIDs: bundle, playerID: player,
            transactionID: transaction, shardIndex: shardIndex, shardCount: shardCount)
        let unknownBundles = bundle.filter { wanted in !configuration.apps.contains { $0.bundleID == wanted } }
        guard unknownBundles.isEmpty else {
            FileHandle.standardError.write(Data("clawback: --bundle \(unknownBundles.joined(separator: ", ")) is not a configured app\n".utf8))
            throw ExitCodes.configuration
        }
        // Production notifications are verified against the app's Apple ID, as Apple's libraries require.
        let withoutAppleID = configuration.apps.enumerated().filter { $0.element.appAppleID == nil }.map { "apps[\($0.offset)]" }
        if strategy == .notifications && !withoutAppleID.isEmpty {
            FileHandle.standardError.write(
                Data(
                    "clawback: --strategy notifications needs app_apple_id for \(withoutAppleID.joined(separator: ", ")): production notifications are verified against it\n"
                        .utf8))
            throw ExitCodes.configuration
        }
        let concurrency = self.concurrency ?? configuration.apple.concurrency
        let http: HTTPClient
        let apps: AppleApps
        do {
            http = try HTTPClient(
                configuration: .init(
                    timeout: .milliseconds(Int64(configuration.apple.timeoutSeconds * 1000)), extraCABundlePath: configuration.apple.extraCAFile,
                    maxConcurrentRequests: max(concurrency, 8)))
            apps = try AppleAppsFactory.make(configuration, shardCount: shardCount, http: http, logger: logger)
        } catch let error as ConfigurationErrors {
            FileHandle.standardError.write(Data("clawback: \(error)\n".utf8))
            throw ExitCodes.configuration
        }
        defer { http.shutdown() }

        let session: DatabaseSession
        do {
            session = try DatabaseSession(database.configuration(configuration.database))
        } catch {
            logger.error("cannot connect to PostgreSQL", metadata: ["error": "\(error)"])
            throw ExitCodes.unavailable
        }
        do {
            // The tail window: the settings record_grant reads, and the partitions ahead of the grant path
            // (normally there already; a busy grants table only postpones them to the next run or prune).
            let settings = configuration.tailWindowSettings
            try await session.run { connection in
                if !dryRun { try settings.apply(on: connection) }
                do {
                    try GrantPartitions.ensureAhead(on: connection)
                } catch let busy as ShortLock.Busy {
                    logger.warning("grant partitions ahead not created", metadata: ["reason": "\(busy)"])
                }
            }
        } catch {
            FileHandle.standardError.write(Data("clawback: cannot prepare the grants table: \(error)\n".utf8))
            throw ExitCodes.unavailable
        }
        let stop = StopSignal()
        stop.install { signal in
            logger.notice("stopping at the next batch boundary; send the signal again to stop at once", metadata: ["signal": "\(signal)"])
        }
        let request = RunRequest(
            scope: RunScope(selection: selection, strategy: strategy.rawValue, dryRun: dryRun),
            origin: RunOrigin(triggeredBy: Self.user(), host: ProcessInfo.processInfo.hostName, arguments: Array(CommandLine.arguments.dropFirst())),
            resumeRunID: resume, concurrency: concurrency, batchSize: batchSize ?? configuration.run.batchSize,
            policy: ReconciliationPolicy(rounding: configuration.run.rounding, clawBackUnknownToApple: configuration.run.clawBackUnknownToApple))
        let gateway = strategy.gateway(apps: apps, auditShare: auditSample / 100, auditSalt: request.scope.key, logger: logger)
        let job = ReconciliationJob(
            request: request, database: session, gateway: gateway, logger: logger, progress: ProgressReporter(logger: logger), stop: stop)

        let outcome: RunOutcome
        do {
            outcome = try await job.run()
        } catch let failure as RunFailure {
            FileHandle.standardError.write(Data("clawback: \(failure)\n".utf8))
            switch failure {
            case .locked: throw ExitCodes.locked
            case .cannotResume: throw ExitCodes.usage
            case .database, .apple: throw ExitCodes.unavailable
            }
        } catch let error as PostgresError {
            FileHandle.standardError.write(Data("clawback: database failure: \(error)\n".utf8))
            throw ExitCodes.unavailable
        } catch let error as PostgresTransactionError {
            FileHandle.standardError.write(Data("clawback: database failure: \(error)\n".utf8))
            throw ExitCodes.unavailable
        }
        if let path = metricsFile ?? configuration.run.metricsFile {
            do {
                try MetricsFile.write(
                    to: path, status: outcome.status, counters: outcome.counters, runID: outcome.runID,
                    window: selection.window.label, dryRun: dryRun)
            } catch {
                logger.error("cannot write the metrics file", metadata: ["path": "\(path)", "error": "\(error)"])
            }
        }
        // The run is committed; the reports come from what it committed, so they can always be written again.
        let reportOptions = reportFlags.options(configuration)
        let files: ReportFiles
        do {
            files = try await session.run { connection in
                try ReportWriting.write(.run(outcome.runID), options: reportOptions, on: connection, logger: logger)
            }
        } catch {
            print(
                json
                    ? RunSummary.json(outcome, selection: selection, dryRun: dryRun, reports: nil)
                    : RunSummary.table(outcome, selection: selection, dryRun: dryRun, reports: nil))
            FileHandle.standardError.write(
                Data(
                    "clawback: run \(outcome.runID) is committed; write its reports with `clawback report --run \(outcome.runID)` once the directory is fixed\n"
                        .utf8))
            throw error
        }
        print(
            json
                ? RunSummary.json(outcome, selection: selection, dryRun: dryRun, reports: files)
                : RunSummary.table(outcome, selection: selection, dryRun: dryRun, reports: files))
        if outcome.status != .succeeded { throw ExitCodes.temporaryFailure }
        if configuration.tailWindow.pruneAfterRun && !dryRun && player == nil && transaction == nil {
            try await pruneAfterRun(configuration, runID: outcome.runID, session: session, logger: logger)
        }
        // Only now is the run done: a process that dies before this line leaves the run to be finished (its
        // reports written, its prune done) by the next invocation, instead of a new run.
        CrashPoint.reached("run.before-finalize")
        do {
            try await session.run { [runID = outcome.runID] in try RunStore.markFinalized(runID, on: $0) }
        } catch {
            FileHandle.standardError.write(
                Data(
                    "clawback: run \(outcome.runID) and its reports are done, but it could not be marked so (\(error)); the next run writes its reports again\n"
                        .utf8))
            throw ExitCodes.unavailable
        }
    }

    /// The monthly job keeps the grants table small once the month is safely reconciled. Another shard
    /// pruning at the same moment is fine: one prune is enough.
    func pruneAfterRun(_ configuration: ClawbackConfiguration, runID: Int64, session: DatabaseSession, logger: Logger) async throws {
        do {
            let outcome = try await session.run { connection in
                try Pruning.prune(configuration, dryRun: false, on: connection, logger: logger)
            }
            logger.info(
                "pruned",
                metadata: [
                    "partitions_dropped": "\(outcome.dropped.count)", "grants_dropped": "\(outcome.dropped.reduce(0) { $0 + ($1.rows ?? 0) })",
                ])
        } catch GrantPruner.PruneError.busy {
            logger.info("another prune is running; this run does not prune")
        } catch let error as GrantPruner.PruneError {
            FileHandle.standardError.write(Data("clawback: run \(runID) succeeded, but pruning failed: \(error); run `clawback prune`\n".utf8))
            throw Pruning.exitCode(for: error)
        }
    }

    static func user() -> String {
        let environment = ProcessInfo.processInfo.environment
        return environment["CLAWBACK_TRIGGERED_BY"] ?? environment["USER"] ?? environment["LOGNAME"] ?? "uid \(getuid())"
    }
}

/// The end-of-run summary on stdout.
enum RunSummary {

    static func table(_ outcome: RunOutcome, selection: GrantSelection, dryRun: Bool, reports: ReportFiles?) -> String {
        let counters = outcome.counters
        var rows: [(String, String)] = [
            (
                "run",
                "\(outcome.runID)\(outcome.committedEarlier ? " (committed by an earlier invocation; finished now)" : outcome.resumed ? " (resumed, attempt \(outcome.attempt))" : "")\(dryRun ? " DRY RUN: no ledger entries written" : "")"
            ),
            ("status", outcome.status.rawValue),
            ("window", selection.window.label + (selection.shardCount > 1 ? ", shard \(selection.shardIndex)/\(selection.shardCount)" : "")),
            ("grants in scope", String(counters.grantsInScope)),
            ("checked by this attempt", String(counters.checked)),
        ]
        rows += Verdict.allCases.map { ("  \($0.rawValue)", String(counters.verdicts[$0] ?? 0)) }
        rows += [
            ("ledger entries created", String(counters.newLedgerEntries)),
            ("units clawed back", String(counters.unitsClawedBack)),
            ("units given back", String(counters.unitsReturned)),
            ("Apple requests", "\(counters.appleRequests) (429: \(counters.appleRateLimited), retries: \(counters.appleRetries))"),
        ]
        if counters.auditedGrants > 0 || counters.missedNotifications > 0 {
            rows.append(("audited / missed by feed", "\(counters.auditedGrants) / \(counters.missedNotifications)"))
        }
        rows += [
            ("duration", String(format: "%.1f s", counters.durationSeconds))
        ]
        if let reports { rows += reports.all.map { ("report", $0) } }
        if outcome.status == .incomplete { rows.append(("next", "rerun the same command to retry the \(counters.unverified) unverified grants")) }
        if outcome.status == .interrupted { rows.append(("next", "rerun the same command to resume run \(outcome.runID)")) }
        return TextTable.render(rows.map { [$0.0, $0.1] })
    }

    static func json(_ outcome: RunOutcome, selection: GrantSelection, dryRun: Bool, reports: ReportFiles?) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let counters = (try? encoder.encode(outcome.counters)).flatMap { try? JSONSerialization.jsonObject(with: $0) } ?? [:]
        let object: [String: Any] = [
            "run_id": outcome.runID, "status": outcome.status.rawValue, "resumed": outcome.resumed, "attempt": outcome.attempt,
            "committed_earlier": outcome.committedEarlier,
            "window": selection.window.label, "shard": "\(selection.shardIndex)/\(selection.shardCount)", "dry_run": dryRun,
            "counters": counters, "reports": reports?.all ?? [],
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

extension RunStrategy: ExpressibleByArgument {}
