public import Logging
public import Reconciliation
import Storage

/// `clawback run --daily` as one operation: the store's daily strategy over every window that still holds a
/// kept grant (`ReconciliationWindow.dailyWindows`), one run per window, oldest first and the next monthly
/// run's window last. Each pass is a `MonthlyRun` of its own (its scope, lock, checks, reports), so each
/// window's report finds the refunds of its purchases however late they came; the passes share nothing but
/// the configuration and what the store's driver shares (Google's Orders API budget), so one that fails leaves the others done, and the next
/// daily run picks it up.
public enum DailyRun {
    /// What the passes did: each committed pass's outcome, and the failures that decide the exit status.
    public struct Outcome: Sendable {
        public var passes: [MonthlyRun.Outcome] = []
        public var failures: [any ExitStatusCarrying & Sendable] = []

        /// The failure to exit with: the first that a retry later the same day cannot fix, else the first.
        public var failure: (any ExitStatusCarrying & Sendable)? {
            failures.first { $0.exitStatus != .temporaryFailure } ?? failures.first
        }
    }

    /// A stop signal came between two passes: the windows left are checked by the next daily run.
    public struct Stopped: ExitStatusCarrying, Sendable {
        public let windowsLeft: Int
        public var exitStatus: ExitStatus { .temporaryFailure }
        public var description: String {
            "stopped before \(windowsLeft) of the daily run's windows: the next daily run checks them"
        }
    }

    /// `request` is the next monthly window's pass (its selection's window is replaced for the earlier ones);
    /// `windows` come from `ReconciliationWindow.dailyWindows`, oldest first.
    public static func perform(
        _ request: MonthlyRun.Request, windows: [ReconciliationWindow], configuration: ClawbackConfiguration, logger: Logger,
        progress: ProgressReporter?, stop: StopSignal
    ) async -> Outcome {
        var outcome = Outcome()
        var worst: RunStatus = .succeeded
        // The passes of one daily run share what its store's driver says they share (Google Play's Orders API
        // budget: one, not one each).
        var request = request
        request.storeShare = StoreDrivers.driver(for: request.strategy.store)?.dailyRunShare(configuration)
        for (index, window) in windows.enumerated() {
            if index > 0 && stop.isRequested {
                logger.notice("stopped before the daily run's remaining windows", metadata: ["windows.left": "\(windows.count - index)"])
                outcome.failures.append(Stopped(windowsLeft: windows.count - index))
                worst = worse(worst, .interrupted)
                break
            }
            var pass = request
            pass.selection.window = window
            // Each purchase once, under the latest window that holds it: an older window's pass checks only the
            // months before the next window's start.
            if index + 1 < windows.count { pass.selection.purchasedBefore = windows[index + 1].start }
            // The metrics file describes the whole daily run: written once, after the last pass.
            pass.metricsFile = nil
            do {
                let done = try await MonthlyRun.perform(pass, configuration: configuration, logger: logger, progress: progress, stop: stop)
                outcome.passes.append(done)
            } catch {
                if let committed = error.outcome { outcome.passes.append(committed) }
                outcome.failures.append(error)
                worst = worse(worst, error.outcome?.run.status ?? .failed)
            }
        }
        // One file for the whole daily run, whatever its passes did: every pass's figures added up, the worst
        // status (a pass that committed nothing is `failed`), the last run id; the next monthly window's label.
        if let last = outcome.passes.last {
            var run = last.run
            run.counters = outcome.passes.reduce(into: RunCounters()) { total, pass in total.add(pass.run.counters) }
            await MonthlyRun.writeMetrics(
                run, pending: last.pending, speed: last.speed, request: request, configuration: configuration, logger: logger,
                status: outcome.passes.reduce(worst) { worse($0, $1.run.status) })
        } else if !outcome.failures.isEmpty {
            let run = CheckingOutcome(runID: 0, status: .failed, counters: RunCounters(), resumed: false, attempt: 0)
            await MonthlyRun.writeMetrics(run, pending: nil, speed: nil, request: request, configuration: configuration, logger: logger)
        }
        return outcome
    }

    /// The status an operator must act on first: failed, then interrupted, then incomplete, then succeeded.
    static func worse(_ one: RunStatus, _ other: RunStatus) -> RunStatus {
        let order: [RunStatus] = [.succeeded, .running, .incomplete, .interrupted, .failed]
        return (order.firstIndex(of: one) ?? 0) >= (order.firstIndex(of: other) ?? 0) ? one : other
    }
}

extension RunCounters {
    /// Adds another run's figures (a daily run's passes, reported as one).
    mutating func add(_ other: RunCounters) {
        grantsInScope += other.grantsInScope
        checked += other.checked
        verdicts.merge(other.verdicts, uniquingKeysWith: +)
        actions.merge(other.actions, uniquingKeysWith: +)
        attemptVerdicts.merge(other.attemptVerdicts, uniquingKeysWith: +)
        newLedgerEntries += other.newLedgerEntries
        unitsClawedBack += other.unitsClawedBack
        unitsReturned += other.unitsReturned
        storeRequests += other.storeRequests
        storeRateLimited += other.storeRateLimited
        storeRetries += other.storeRetries
        auditedGrants += other.auditedGrants
        missedNotifications += other.missedNotifications
        rejectedNotifications += other.rejectedNotifications
        for app in other.voidsNotCovered where !voidsNotCovered.contains(app) { voidsNotCovered.append(app) }
        defaultPartitionRows = max(defaultPartitionRows, other.defaultPartitionRows)
        durationSeconds += other.durationSeconds
    }
}
