import CrashPoints
import Foundation
import HTTP
public import Logging
public import Reconciliation
public import Reports
public import Storage

/// `clawback run` as one operation: the tail window's settings and partitions, the reconciliation, the
/// metrics file, the reports, the prune, and finally marking the run done. The command line only turns
/// flags into a `Request` and prints the outcome; every failure comes back as a `MonthlyRun.Failure` that
/// carries its exit status (and, once the run has committed, the outcome to print).
public enum MonthlyRun {
    public struct Request: Sendable {
        public var selection: GrantSelection
        public var strategy: RunStrategy
        public var dryRun: Bool
        public var resumeRunID: Int64?
        /// Verifications in flight (nil: the configuration's).
        public var concurrency: Int?
        /// Checks per database transaction (nil: the configuration's).
        public var batchSize: Int?
        /// Notifications strategy: the share of grants re-verified per transaction, 0 to 1.
        public var auditShare: Double
        /// Where to write the Prometheus textfile (nil: the configuration's, if any).
        public var metricsFile: String?
        public var reports: ReportOptions
        public var origin: RunOrigin
        public var database: DatabaseConfiguration
        /// What a daily run's passes share (`StoreDriver.dailyRunShare`); nil: the run's own.
        var storeShare: (any Sendable)?

        public init(
            selection: GrantSelection, strategy: RunStrategy, dryRun: Bool, resumeRunID: Int64?, concurrency: Int?, batchSize: Int?,
            auditShare: Double, metricsFile: String?, reports: ReportOptions, origin: RunOrigin, database: DatabaseConfiguration
        ) {
            self.selection = selection
            self.strategy = strategy
            self.dryRun = dryRun
            self.resumeRunID = resumeRunID
            self.concurrency = concurrency
            self.batchSize = batchSize
            self.auditShare = auditShare
            self.metricsFile = metricsFile
            self.reports = reports
            self.origin = origin
            self.database = database
        }

        /// A narrowed run (one player or transaction, or a daily run's refunds) never prunes: it is not the
        /// monthly job.
        var isNarrowed: Bool { selection.playerID != nil || selection.transactionID != nil || strategy.isDaily }
    }

    public struct Outcome: Sendable {
        public var run: CheckingOutcome
        public var selection: GrantSelection
        /// The report files (nil when they could not be written).
        public var reports: ReportFiles?
        /// The ledger's pending work when the run ended (nil when it could not be read).
        public var pending: StaffLedger.Pending?
        /// How fast the run's store's refunds came back over the last 30 days (nil: nothing taken back, or
        /// not readable).
        public var speed: RecoverySpeed?
    }

    public enum Failure: ExitStatusCarrying {
        /// Before anything ran: the configuration or the command asks for something impossible.
        case configuration(ConfigurationProblem)
        /// Before anything ran: PostgreSQL could not be reached or prepared.
        case unavailable(Unavailable)
        /// Before anything ran: the database is not migrated, or was migrated by a newer clawback.
        case schema(SchemaError)
        /// The reconciliation could not start or go on (lock held, database or store down, bad --resume).
        case run(CheckingFailure)
        /// The reconciliation failed in a way nothing expected: a bug, reported as one (exit 70).
        case unexpected(any Error)
        /// The run committed but its reports could not be written.
        case reportsNotWritten(Outcome, ReportError)
        /// Everything is done and the reports are on disk, but some could not be delivered to the bucket.
        case reportsNotDelivered(Outcome, ReportDelivery.Failure)
        /// The run committed with unverified grants, or was interrupted: rerun to finish.
        case unfinished(Outcome)
        /// The run succeeded and reported, but the prune after it failed.
        case pruneFailed(Outcome, GrantPruner.PruneError)
        /// Everything is done but the run could not be marked so: the next run writes its reports again.
        case notFinalized(Outcome, any Error)
        /// Everything is done, the run finalized, but the PDF asked for could not be printed.
        case pdfNotPrinted(Outcome, String)

        /// The outcome to print, once the run has committed.
        public var outcome: Outcome? {
            switch self {
            case .configuration, .unavailable, .schema, .run, .unexpected: nil
            case .reportsNotWritten(let outcome, _), .reportsNotDelivered(let outcome, _), .unfinished(let outcome), .pruneFailed(let outcome, _),
                .notFinalized(let outcome, _), .pdfNotPrinted(let outcome, _):
                outcome
            }
        }

        public var exitStatus: ExitStatus {
            switch self {
            case .configuration: .configuration
            case .unavailable: .unavailable
            case .schema(let error): error.exitStatus
            case .run(let failure): failure.exitStatus
            case .unexpected: .software
            case .reportsNotWritten(_, let error): error.exitStatus
            case .reportsNotDelivered(_, let failure): failure.exitStatus
            case .unfinished: .temporaryFailure
            case .pruneFailed(_, let error): error.exitStatus
            case .notFinalized: .unavailable
            case .pdfNotPrinted: .cannotCreateOutput
            }
        }

        public var description: String {
            switch self {
            case .configuration(let problem): "\(problem)"
            case .unavailable(let reason): "\(reason)"
            case .schema(let error): "\(error)"
            case .unexpected(let error): "internal error during the run: \(error)"
            case .run(let failure): "\(failure)"
            case .reportsNotWritten(let outcome, let error):
                "\(error); run \(outcome.run.runID) is committed: write its reports with `clawback report --run \(outcome.run.runID)` once that is fixed"
            case .reportsNotDelivered(let outcome, let failure): "run \(outcome.run.runID) is done; \(failure)"
            case .unfinished(let outcome):
                outcome.run.status == .interrupted
                    ? "run \(outcome.run.runID) was interrupted: rerun the same command to resume it"
                    : "run \(outcome.run.runID) left \(outcome.run.counters.unverified) grants unverified: rerun the same command to retry them"
            case .pruneFailed(let outcome, let error): "run \(outcome.run.runID) succeeded, but pruning failed: \(error); run `clawback prune`"
            case .notFinalized(let outcome, let error):
                "run \(outcome.run.runID) and its reports are done, but it could not be marked so (\(error)); the next run writes its reports again"
            case .pdfNotPrinted(let outcome, let reason):
                "run \(outcome.run.runID) is done and its reports written, but not the PDF: \(reason); print it with `clawback report --run \(outcome.run.runID) --pdf`"
            }
        }
    }

    public static func perform(
        _ request: Request, configuration: ClawbackConfiguration, logger: Logger, progress: ProgressReporter?, stop: StopSignal
    ) async throws(Failure) -> Outcome {
        // A run reads its strategy's store, whatever the selection was built with.
        var request = request
        // The strategy as its store's driver registered it: one built in code under a registered name with
        // other traits (a daily one that would prune) is refused.
        guard let registered = RunStrategy(rawValue: request.strategy.rawValue), registered.store == request.strategy.store,
            registered.isDaily == request.strategy.isDaily, registered.auditsFeed == request.strategy.auditsFeed
        else {
            throw .configuration(.asked("--strategy \(request.strategy.rawValue) is not a strategy a registered store driver declares"))
        }
        request.strategy = registered
        request.selection.store = request.strategy.store
        let store = request.strategy.store
        guard let driver = StoreDrivers.driver(for: store) else {
            throw .configuration(.asked("--strategy \(request.strategy.rawValue): no driver of store \(store.rawValue) is registered"))
        }
        let configured = driver.apps(in: configuration)
        let unknownBundles = request.selection.bundleIDs.filter { !configured.contains($0) }
        guard unknownBundles.isEmpty else {
            throw .configuration(.asked("--bundle \(unknownBundles.joined(separator: ", ")) is not a configured \(store.displayName) app"))
        }
        let delivery: ReportDelivery?
        do {
            delivery = try ReportDelivery.configured(configuration, logger: logger)
        } catch {
            throw .configuration(.invalid(error))
        }
        let scope = RunScope(selection: request.selection, strategy: request.strategy, dryRun: request.dryRun)
        // Only the store the run checks is started, and only its keys are read: a Google Play run's pods and
        // units mount Google's key only.
        let connection: StoreConnection
        do {
            connection = try driver.open(
                StoreRun(
                    strategy: request.strategy, selection: request.selection, concurrency: request.concurrency, auditShare: request.auditShare,
                    auditSalt: scope.key, share: request.storeShare), configuration: configuration, logger: logger)
        } catch {
            switch error {
            case .configuration(let problem): throw .configuration(problem)
            case .unavailable(let reason): throw .unavailable(reason)
            case .misuse: throw .unexpected(error)
            }
        }
        defer { connection.close() }
        let session = try await JobStart.database(request.database, logger: logger, failing: Failure.self)
        try await prepareGrantsTable(configuration, dryRun: request.dryRun, session: session, logger: logger)

        let runRequest = CheckingRequest(
            scope: scope, origin: request.origin, resumeRunID: request.resumeRunID,
            concurrency: request.concurrency ?? connection.defaultConcurrency, batchSize: request.batchSize ?? configuration.run.batchSize,
            policy: driver.policy(configuration))
        let gateway = connection.gateway
        let job = CheckingPipeline(request: runRequest, database: session, gateway: gateway, logger: logger, progress: progress, stop: stop)
        let run: CheckingOutcome
        do {
            run = try await job.run()
        } catch let failure as CheckingFailure {
            throw .run(failure)
        } catch {
            // A database failure the job did not classify is still the database; anything else is not.
            if let database = DatabaseError(error) { throw .run(.database(database)) }
            throw .unexpected(error)
        }
        let pending = try? await session.run { try StaffLedger.pending(on: $0) }
        let since = Date() - MetricsFile.speedSpan
        let speed = try? await session.run { try RecoverySpeed.measure(.recent(store, since: since), on: $0).first }
        await writeMetrics(run, pending: pending, speed: speed, request: request, configuration: configuration, logger: logger)

        // The run is committed; the reports come from what it committed, so they can always be written again.
        var outcome = Outcome(run: run, selection: request.selection, reports: nil, pending: pending, speed: speed)
        do {
            outcome.reports = try await session.run { [options = request.reports] connection in
                let files = try ReportGenerator.write(
                    .run(run.runID), options: options, tables: StoreDrivers.reportTables(configuration), from: ReportStore(connection))
                logger.info("report written", metadata: ["report.files": "\(files.all.joined(separator: " "))"])
                return files
            }
        } catch let error as ReportError {
            throw .reportsNotWritten(outcome, error)
        } catch {
            throw .reportsNotWritten(outcome, .badData("\(error)"))
        }
        // Delivered whatever the run's status: finance sees an incomplete run's reports too.
        var notDelivered: ReportDelivery.Failure?
        if let delivery, let files = outcome.reports {
            do {
                try await delivery.deliver(files.all)
            } catch {
                logger.error("reports not delivered", metadata: ["error": "\(error)"])
                notDelivered = error
            }
        }
        guard run.status == .succeeded else { throw .unfinished(outcome) }
        if configuration.tailWindow.pruneAfterRun && !request.dryRun && !request.isNarrowed {
            try await prune(configuration, outcome: outcome, session: session, logger: logger)
        }
        // Only now is the run done: a process that dies before this line leaves the run to be finished (its
        // reports written, its prune done) by the next invocation, instead of a new run.
        CrashPoint.reached("run.before-finalize")
        do {
            try await session.run { [runID = run.runID] in try RunStore.markFinalized(runID, on: $0) }
        } catch {
            throw .notFinalized(outcome, error)
        }
        if let notDelivered { throw .reportsNotDelivered(outcome, notDelivered) }
        if let pdf = outcome.reports?.pdfFailure { throw .pdfNotPrinted(outcome, pdf) }
        return outcome
    }

    /// The tail window: the settings record_grant reads, and the partitions ahead of the grant path
    /// (normally there already; a busy grants table only postpones them to the next run or prune).
    static func prepareGrantsTable(_ configuration: ClawbackConfiguration, dryRun: Bool, session: DatabaseSession, logger: Logger)
        async throws(Failure)
    {
        let settings = configuration.tailWindowSettings
        do {
            try await session.run { connection in
                if !dryRun { try settings.apply(on: connection) }
                do {
                    try GrantPartitions.ensureAhead(on: connection)
                } catch let busy as ShortLock.Busy {
                    logger.warning("grant partitions ahead not created", metadata: ["reason": "\(busy)"])
                }
            }
        } catch let error as DatabaseError {
            throw .database(error)
        } catch {
            throw .unavailable(Unavailable("cannot prepare the grants table", cause: error))
        }
    }

    /// Metrics that cannot be written or pushed are logged, never a failure of the run. `status`: what they
    /// report (a daily run's passes report the worst of them), the run's own by default.
    static func writeMetrics(
        _ run: CheckingOutcome, pending: StaffLedger.Pending?, speed: RecoverySpeed?, request: Request, configuration: ClawbackConfiguration,
        logger: Logger,
        status: RunStatus? = nil
    ) async {
        // Each store's driver names its series, and the file a run writes when the command names none.
        guard let driver = StoreDrivers.driver(for: request.strategy.store) else { return }
        let series = driver.metricsSeries(of: request.strategy)
        let file = request.metricsFile ?? driver.defaultMetricsFile(of: request.strategy, configuration: configuration)
        // Each shard of a sharded run is its own group at the Pushgateway, as its own textfile would be.
        let selection = request.selection
        let target = MetricsTarget.configured(
            file: file, configuration, grouping: selection.shardCount > 1 ? ["shard": "\(selection.shardIndex)"] : [:])
        guard !target.isEmpty else { return }
        do {
            try await MetricsFile.write(
                to: target, status: status ?? run.status, counters: run.counters, runID: run.runID, window: selection.window.label,
                dryRun: request.dryRun, pending: pending, speed: speed, series: series)
        } catch {
            logger.error("cannot deliver the metrics", metadata: ["error": "\(error)"])
        }
    }

    /// The monthly job keeps the grants table small once the month is safely reconciled. Another shard
    /// pruning at the same moment is fine: one prune is enough.
    static func prune(_ configuration: ClawbackConfiguration, outcome: Outcome, session: DatabaseSession, logger: Logger) async throws(Failure) {
        do {
            let pruned = try await session.run { connection in try Pruning.prune(configuration, dryRun: false, on: connection, logger: logger) }
            logger.info(
                "pruned",
                metadata: [
                    "partitions_dropped": "\(pruned.dropped.count)", "grants_dropped": "\(pruned.dropped.reduce(0) { $0 + ($1.rows ?? 0) })",
                ])
        } catch GrantPruner.PruneError.busy {
            logger.info("another prune is running; this run does not prune")
        } catch let error as GrantPruner.PruneError {
            throw .pruneFailed(outcome, error)
        } catch {
            throw .pruneFailed(outcome, GrantPruner.PruneError(error))
        }
    }
}

/// The tail window's prune, shared by `clawback prune` and the prune after a run.
public enum Pruning {
    public static func prune(_ configuration: ClawbackConfiguration, dryRun: Bool, on connection: DatabaseConnection, logger: Logger)
        throws(GrantPruner.PruneError) -> GrantPruner.Outcome
    {
        do {
            if !dryRun { try configuration.tailWindowSettings.apply(on: connection) }
        } catch {
            throw GrantPruner.PruneError(error)
        }
        let outcome = try GrantPruner(
            recordRetentionYears: configuration.tailWindow.recordRetentionYears, dryRun: dryRun,
            storeRecords: StoreDrivers.all.flatMap(\.recordsKept)
        ).prune(on: connection)
        for dropped in outcome.dropped {
            logger.info(
                dryRun ? "would drop grant partition" : "dropped grant partition",
                metadata: [
                    "partition": "\(dropped.partition.name)", "rows": "\(dropped.rows ?? 0)", "bytes": "\(dropped.partition.bytes)",
                ])
        }
        if outcome.defaultPartitionRows > 0 {
            logger.warning("the default grant partition is not empty", metadata: ["rows": "\(outcome.defaultPartitionRows)"])
        }
        return outcome
    }
}
