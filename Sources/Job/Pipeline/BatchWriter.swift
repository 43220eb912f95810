import CrashPoints
import Reconciliation
import Storage

/// Writes a run's checks and ledger entries a batch per transaction on the job's session, with one batch
/// in flight while the job fills the next. A batch is counted when it has committed: before the next one
/// is sent, and by `settle` before the run finishes, so the counters never include an uncommitted batch.
final class BatchWriter {
    private let database: DatabaseSession
    private let gateway: any StoreGateway
    private let runID: Int64
    private let dryRun: Bool
    /// A resumed run's pages may take over grants an earlier attempt left unverified.
    private let resumed: Bool
    private let fence: LockFence
    private let earlier: RunCounters
    private let progress: (RunCounters) -> Void
    private var inFlight: Task<BatchOutcome, any Error>?
    private(set) var counters: RunCounters

    init(
        database: DatabaseSession, gateway: any StoreGateway, runID: Int64, dryRun: Bool, resumed: Bool, fence: LockFence,
        counters: RunCounters, earlier: RunCounters, progress: @escaping (RunCounters) -> Void
    ) {
        self.database = database
        self.fence = fence
        self.gateway = gateway
        self.runID = runID
        self.dryRun = dryRun
        self.resumed = resumed
        self.counters = counters
        self.earlier = earlier
        self.progress = progress
    }

    /// Waits for the batch in flight, counts it, then sends `batch` and `pages` (both emptied) without
    /// waiting for them.
    func send(_ batch: inout [CheckRecord], _ pages: inout CheckPages) async throws {
        try await settle()
        guard !batch.isEmpty || !pages.isEmpty else { return }
        var interim = counters
        interim.setStore(gateway.statistics, earlier: earlier)
        let (records, paged, json, runID, dryRun, resumed, fence, database) = (
            batch, pages.pages, interim.json, runID, dryRun, resumed, fence, database
        )
        batch.removeAll(keepingCapacity: true)
        pages.removeAll()
        inFlight = Task {
            let outcome = try await database.run {
                try CheckWriter.write(
                    records, pages: paged, runID: runID, dryRun: dryRun, resumed: resumed, counters: json, fence: fence, on: $0)
            }
            CrashPoint.reached("batch.after-commit")
            return outcome
        }
    }

    /// Waits for the batch in flight, if any, and counts it.
    func settle() async throws {
        guard let pending = inFlight else { return }
        inFlight = nil
        let outcome = try await pending.value
        for record in outcome.records {
            let created = record.decision.action != .alreadyRecorded && !dryRun ? record.decision.entry?.units : nil
            counters.record(
                record.decision.action, verdict: record.decision.verdict,
                entryUnits: record.decision.entry?.kind == .review ? nil : created)
        }
        counters.record(.none, verdict: .noRefundReported, entryUnits: nil, times: outcome.pagedGrants)
        counters.newLedgerEntries += outcome.newEntryIDs.count
        progress(counters)
    }

    /// After a failure elsewhere: lets the batch in flight end (committed or not) before the run is
    /// marked failed, without counting it.
    func abandon() async {
        _ = try? await inFlight?.value
        inFlight = nil
    }
}
