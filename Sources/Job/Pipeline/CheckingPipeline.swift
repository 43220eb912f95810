import CrashPoints
import Foundation
public import Logging
public import Reconciliation
public import Storage

/// What to run.
public struct CheckingRequest: Sendable {
    public var scope: RunScope
    public var origin: RunOrigin
    /// Continue this run (`--resume RUN`) instead of finding the scope's resumable one.
    public var resumeRunID: Int64?
    /// Verifications in flight at once.
    public var concurrency: Int
    /// Checks per database transaction.
    public var batchSize: Int
    /// Grants read per query.
    public var pageSize: Int
    public var policy: ReconciliationPolicy

    public init(
        scope: RunScope, origin: RunOrigin, resumeRunID: Int64? = nil, concurrency: Int = 32, batchSize: Int = 500, pageSize: Int = 1000,
        policy: ReconciliationPolicy = .init()
    ) {
        self.scope = scope
        self.origin = origin
        self.resumeRunID = resumeRunID
        self.concurrency = max(1, concurrency)
        self.batchSize = max(1, batchSize)
        self.pageSize = max(1, pageSize)
        self.policy = policy
    }
}

/// How a run ended.
public struct CheckingOutcome: Sendable {
    public var runID: Int64
    /// succeeded, incomplete (unverified grants remain: rerun to finish) or interrupted (rerun to resume).
    public var status: RunStatus
    public var counters: RunCounters
    public var resumed: Bool
    public var attempt: Int
    /// The run had committed in an earlier invocation that died before writing its reports: nothing was
    /// checked now, only its reports (and prune) remain to be done.
    public var committedEarlier = false
}

/// Why a run could not start or go on.
public enum CheckingFailure: Error, Sendable, CustomStringConvertible {
    /// Another run holds the scope's lock.
    case locked(scope: String, holder: String)
    /// `--resume RUN` named a run that does not exist or has another scope.
    case cannotResume(String)
    /// The database failed during the run; what was committed stays, the run is resumable.
    case database(DatabaseError)
    /// The store could not be read before the run could start (the App Store's notification feed).
    case storeUnreadable(Store, any Error)
    /// The scope's lock was lost mid-run: stopped at once, the unwritten batch rolled back; rerun to resume.
    case lockLost(ScopeLockLost)

    public var description: String {
        switch self {
        case .locked(let scope, let holder): "another run holds the lock for this scope (\(scope)): \(holder)"
        case .cannotResume(let reason): "cannot resume: \(reason)"
        case .database(let error): "database failure during the run: \(error)"
        case .storeUnreadable(let store, let error): "could not read from \(store.company): \(error)"
        case .lockLost(let lost): "\(lost)"
        }
    }
}

/// The checking of one run, the heart of `MonthlyRun` (which is the whole `clawback run`: settings, lock,
/// this, metrics, reports, prune): streams the selection's grants a page at a time, asks the store about each
/// with a bounded number in flight, decides with the pure rules, and writes checks and ledger entries a
/// batch per transaction. Memory holds two pages (the one being worked through and the next), the
/// requests in flight and two batches (one being written, one filling), whatever the window.
public final class CheckingPipeline: Sendable {
    let request: CheckingRequest
    let database: DatabaseSession
    let gateway: any StoreGateway
    let logger: Logger
    let progress: ProgressReporter?
    let stop: StopSignal

    public init(
        request: CheckingRequest, database: DatabaseSession, gateway: any StoreGateway, logger: Logger, progress: ProgressReporter?,
        stop: StopSignal
    ) {
        self.request = request
        self.database = database
        self.gateway = gateway
        self.logger = logger
        self.progress = progress
        self.stop = stop
    }

    public func run() async throws -> CheckingOutcome {
        let scope = request.scope
        let started = ContinuousClock.now
        let lockKey = scope.lockKey
        let stop = self.stop
        let acquired: ScopeLock?
        do {
            acquired = try await ScopeLock.acquire(lockKey, like: database, logger: logger) { stop.request() }
        } catch let error as DatabaseError {
            throw CheckingFailure.database(error)
        }
        guard let lock = acquired else { throw CheckingFailure.locked(scope: scope.key, holder: try await describeHolder()) }
        // Released explicitly (not at process exit) so that a later run in the same process can take it; a
        // lost connection releases it by itself.
        do {
            let outcome = try await runHoldingLock(started: started, fence: lock.fence)
            await lock.release()
            return outcome
        } catch let lost as ScopeLockLost {
            await lock.release()
            throw CheckingFailure.lockLost(lost)
        } catch {
            await lock.release()
            throw error
        }
    }

    private func runHoldingLock(started: ContinuousClock.Instant, fence: LockFence) async throws -> CheckingOutcome {
        let scope = request.scope
        let (run, resumed) = try await startOrResume()
        if run.status == .succeeded {
            logger.notice(
                "the run committed in an earlier invocation that stopped before its reports; finishing it",
                metadata: [
                    "run.id": "\(run.runID)"
                ])
            var counters = storedCounters(of: run)
            counters.checked = 0
            return CheckingOutcome(
                runID: run.runID, status: run.status, counters: counters, resumed: true, attempt: run.attempts, committedEarlier: true)
        }
        var logger = self.logger
        logger[metadataKey: "run.id"] = "\(run.runID)"
        logger.info(
            "run started",
            metadata: [
                "run.scope": "\(scope.key)", "run.resumed": "\(resumed)", "run.attempt": "\(run.attempts)", "run.dry_run": "\(scope.dryRun)",
            ])
        var counters = RunCounters()
        // The store's figures add up over the run's attempts (each earlier one as far as its last commit).
        let earlier = resumed ? storedCounters(of: run) : RunCounters()
        counters.grantsInScope = try await database.run { [selection = scope.selection] in try GrantStore.count(selection, on: $0) }
        counters.defaultPartitionRows = try await database.run { try GrantPartitions.defaultPartitionRows(on: $0) }
        let analyzed = try await database.run { try GrantPartitions.refreshStaleStatistics(on: $0) }
        if !analyzed.isEmpty { logger.info("statistics refreshed before reading", metadata: ["partitions": "\(analyzed.joined(separator: ", "))"]) }
        if counters.defaultPartitionRows > 0 {
            logger.warning(
                "grants outside every monthly partition: they sit in clawback.grants_default, which prune never drops",
                metadata: [
                    "rows": "\(counters.defaultPartitionRows)"
                ])
        }
        do {
            try await gateway.prepare(RunContext(selection: scope.selection, database: database))
        } catch {
            counters.setStore(gateway.statistics, earlier: earlier)
            try await markFailed(run.runID, counters: counters, error: error, fence: fence)
            if let database = DatabaseError(error) { throw CheckingFailure.database(database) }
            throw CheckingFailure.storeUnreadable(scope.strategy.store, error)
        }
        // What the strategy reads: the scope's grants, or fewer (the daily run's, named by the refund feed).
        let selection = gateway.narrowing(scope.selection)
        if selection != scope.selection { counters.grantsInScope = try await database.run { try GrantStore.count(selection, on: $0) } }
        let alreadyDone = try await database.run { [runID = run.runID] in try RunStore.decidedChecks(runID, on: $0) }

        do {
            try await process(
                run: run, selection: selection, resumed: resumed, counters: &counters, earlier: earlier, alreadyDone: alreadyDone, fence: fence)
        } catch let lost as ScopeLockLost {
            // Another run may hold the scope, and this run's row, now: nothing more is written to either.
            progress?.finish()
            throw lost
        } catch {
            counters.setStore(gateway.statistics, earlier: earlier)
            counters.durationSeconds = Self.seconds(ContinuousClock.now - started)
            progress?.finish()
            try await markFailed(run.runID, counters: counters, error: error, fence: fence)
            if let database = DatabaseError(error) { throw CheckingFailure.database(database) }
            throw error
        }

        if !stop.isRequested { try await gateway.finish() }
        counters.setStore(gateway.statistics, earlier: earlier)
        gateway.contribute(to: &counters)
        counters.verdicts = try await database.run { [runID = run.runID] in try RunStore.verdictCounts(runID, on: $0) }
        counters.durationSeconds = Self.seconds(ContinuousClock.now - started)
        let status: RunStatus = stop.isRequested ? .interrupted : (counters.unverified > 0 ? .incomplete : .succeeded)
        // Only while the scope is still this run's (a lost lock stops the run; another may have resumed it).
        try await database.run { [runID = run.runID, counters] in
            try RunStore.finish(runID, status: status, counters: counters, error: nil, fence: fence, on: $0)
        }
        CrashPoint.reached("run.after-finish")
        progress?.update(counters, total: counters.grantsInScope, alreadyDone: alreadyDone, force: true)
        progress?.finish()
        logger.info("run finished", metadata: ["run.status": "\(status)", "run.checked": "\(counters.checked)"])
        return CheckingOutcome(runID: run.runID, status: status, counters: counters, resumed: resumed, attempt: run.attempts)
    }

    /// The pipeline. Child tasks ask the store and decide; this task takes pages from the reader (which reads
    /// one ahead on a session of its own) and hands full batches to the writer (one in flight on the job's
    /// session), so that reading, asking the store and writing overlap. Grants the gateway can answer without a
    /// request are decided in line.
    ///
    /// `no_refund_reported` checks (what the notifications strategy concludes for most grants) are kept in
    /// check pages, one row per statement and batch (`CheckPages`), so that what the run writes follows
    /// refunds, not grants. A batch is sent when its checks or its paged grants reach their bound.
    private func process(
        run: RunRecord, selection: GrantSelection, resumed: Bool, counters: inout RunCounters, earlier: RunCounters, alreadyDone: Int,
        fence: LockFence
    ) async throws {
        let runID = run.runID
        let policy = request.policy
        let gateway = self.gateway
        let total = counters.grantsInScope
        let session = try database.sibling(applicationName: database.configuration.applicationName + "-reader", label: "clawback.database.reader")
        // The page query probes each grant's check only for a run resumed with checks already made: a run
        // moves forward through the grants, so nothing after its cursor was checked by it otherwise.
        let pages = PageReader(
            session: session, selection: selection, skippingCheckedBy: alreadyDone > 0 ? runID : nil,
            pageSize: request.pageSize)
        let writer = BatchWriter(
            database: database, gateway: gateway, runID: runID, dryRun: request.scope.dryRun, resumed: resumed, fence: fence,
            counters: counters, earlier: earlier
        ) {
            [progress] counters in progress?.update(counters, total: total, alreadyDone: alreadyDone)
        }
        var queue: ArraySlice<(Grant, LedgerHistory)> = []
        var batch: [CheckRecord] = []
        batch.reserveCapacity(request.batchSize)
        var checkPages = CheckPages()
        let pagedPerBatch = request.batchSize * Self.pagedGrantsPerCheck
        do {
            try await withThrowingTaskGroup(of: CheckRecord.self) { group in
                var inFlight = 0
                while true {
                    if queue.isEmpty && !pages.exhausted && !stop.isRequested { queue = try await pages.next()[...] }
                    if let (grant, history) = queue.first, inFlight < request.concurrency, !stop.isRequested {
                        queue.removeFirst()
                        if let answer = gateway.localAnswer(for: grant, ledger: history) {
                            let record = CheckRecord(grant: grant, answer: answer, ledger: history, policy: policy)
                            if !checkPages.take(record) { batch.append(record) }
                        } else {
                            inFlight += 1
                            group.addTask {
                                CheckRecord(grant: grant, answer: await gateway.answer(for: grant, ledger: history), ledger: history, policy: policy)
                            }
                            continue
                        }
                    } else {
                        guard inFlight > 0, let record = try await group.next() else { break }
                        inFlight -= 1
                        if !checkPages.take(record) { batch.append(record) }
                    }
                    if batch.count >= request.batchSize || checkPages.grants >= pagedPerBatch { try await writer.send(&batch, &checkPages) }
                }
            }
            try await writer.send(&batch, &checkPages)
            try await writer.settle()
        } catch {
            await writer.abandon()
            await pages.settle()
            counters = writer.counters
            throw error
        }
        await pages.settle()
        counters = writer.counters
    }

    /// Paged grants a batch carries for each check it may carry: a paged grant costs its id and purchase
    /// time in an array, a check a row with its index entries.
    static let pagedGrantsPerCheck = 20

    /// The counters an earlier attempt stored with the run.
    private func storedCounters(of run: RunRecord) -> RunCounters {
        do {
            return try RunStore.counters(of: run)
        } catch {
            // The checks and ledger are intact either way; only the figures the earlier attempt kept are lost.
            logger.warning(
                "the run's stored counters cannot be read; its figures start from zero",
                metadata: [
                    "run.id": "\(run.runID)", "error": "\(error)",
                ])
            return RunCounters()
        }
    }

    private func startOrResume() async throws -> (RunRecord, Bool) {
        let scope = request.scope
        let origin = request.origin
        if let runID = request.resumeRunID {
            let found = try await database.run { try RunStore.find(runID, on: $0) }
            guard let found else { throw CheckingFailure.cannotResume("there is no run \(runID)") }
            guard found.scopeKey == scope.key else {
                throw CheckingFailure.cannotResume(
                    "run \(runID) covers another scope (\(found.scopeKey)); give the same window, bundles, shard and strategy")
            }
            guard found.status != .succeeded || found.finalizedAt == nil else {
                throw CheckingFailure.cannotResume("run \(runID) already succeeded")
            }
            if found.status == .succeeded { return (found, true) }
            return (try await database.run { try RunStore.resume(runID, on: $0) }, true)
        }
        if let resumable = try await database.run({ try RunStore.resumable(scope, on: $0) }) {
            if resumable.status == .succeeded { return (resumable, true) }
            return (try await database.run { try RunStore.resume(resumable.runID, on: $0) }, true)
        }
        return (try await database.run { try RunStore.create(scope, origin: origin, on: $0) }, false)
    }

    /// Marks the run failed while its lock is still its own. A lost lock is said as such (`ScopeLockLost`: the
    /// run that holds the scope now owns the row, and the run exits 75, not with the failure that stopped it);
    /// a mark that cannot be written otherwise is left to the next run, which resumes the unfinished row.
    private func markFailed(_ runID: Int64, counters: RunCounters, error: any Error, fence: LockFence) async throws(ScopeLockLost) {
        do {
            try await database.run { try RunStore.finish(runID, status: .failed, counters: counters, error: "\(error)", fence: fence, on: $0) }
        } catch let lost as ScopeLockLost {
            throw lost
        } catch {
            logger.warning("the run could not be marked failed; the next run resumes it", metadata: ["error": "\(error)"])
        }
    }

    /// "run 12 started by cron on host-a at …, pid 4711 (heartbeat …)".
    private func describeHolder() async throws -> String {
        let scope = request.scope
        return try await database.run { try RunStore.describeHolder(of: scope, on: $0) }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
