import AppStore
import AppStoreSimulator
import Foundation
import Job
import Logging
import Postgres
import Reconciliation
import Storage
import Synchronization
import TestSupport
import Testing

/// The notifications strategy keeps its `no_refund_reported` checks in check pages (migration 0011). Held
/// to the same properties as check rows: a run stopped anywhere and resumed until done decides every grant
/// exactly once and exactly as a run that was never stopped.
@Suite("notifications runs keep their unflagged checks in pages")
struct CheckPagesTests {
    /// 400 purchases over 40 days, one in seven refunded (some prorated, some reversed), one in nine in the
    /// sandbox (those bought more than 30 days ago are before the sandbox feed's reach: asked per transaction).
    static let world: [TransactionRecord] = (0..<400).map { index in
        var refund: RefundRecord?
        if index % 7 == 0 {
            refund =
                switch index % 3 {
                case 0: JobFixture.refund(daysAgo: 0.5)
                case 1: JobFixture.refund(daysAgo: 0.5, type: "REFUND_PRORATED", percentage: 25_000)
                default: JobFixture.refund(daysAgo: 0.9, reversedDaysAgo: 0.2)
                }
        }
        return JobFixture.purchase(
            String(3_100_000_000 + index), daysAgo: 1 + Double(index) / 10, refund: refund,
            environment: index % 9 == 0 ? "Sandbox" : "Production")
    }

    static func gateway(_ fixture: JobFixture) -> NotificationFeedGateway {
        NotificationFeedGateway(apps: fixture.apps(), auditShare: 0.05, auditSalt: "pages", logger: Logger(label: "test"))
    }

    static var scope: (JobFixture) -> RunScope {
        { RunScope(selection: GrantSelection(window: $0.window), strategy: .notifications, dryRun: false) }
    }

    /// What a run decided and wrote: its verdict per grant, how many checks each grant has in the run (in
    /// the checks table and the pages together), and the ledger.
    struct Decided: Equatable {
        var verdicts: [String: String]
        var duplicates: [String]
        var ledger: [String]
        var paged: Int
        var pagedInChecksTable: Int
    }

    static func decided(_ fixture: JobFixture, run runID: Int64) throws -> Decided {
        let connection = fixture.connection
        let duplicates = try connection.query(
            "SELECT transaction_id FROM clawback.run_checks WHERE run_id = \(runID) GROUP BY transaction_id HAVING count(*) > 1"
        ).rows.map { try $0.decode(String.self, at: 0) }
        let ledger = try connection.query(
            "SELECT transaction_id || ' ' || kind || ' ' || units FROM clawback.ledger ORDER BY transaction_id, entry_id"
        ).rows.map { try $0.decode(String.self, at: 0) }
        let paged =
            try connection.query("SELECT coalesce(sum(grants), 0) FROM clawback.check_pages WHERE run_id = \(runID)").first?
            .decode(Int.self, at: 0) ?? -1
        let inChecks =
            try connection.query(
                "SELECT count(*) FROM clawback.checks WHERE run_id = \(runID) AND verdict = 'no_refund_reported'"
            ).first?.decode(Int.self, at: 0) ?? -1
        return Decided(
            verdicts: try fixture.verdicts(run: runID), duplicates: duplicates, ledger: ledger, paged: paged, pagedInChecksTable: inChecks)
    }

    @Test(
        "a run stopped anywhere and resumed until done equals a run never stopped: every grant decided once, in a check or a page",
        arguments: [29, 97, 350])
    func stoppedAndResumed(stopAfter: Int) async throws {
        let clean = try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world) { fixture in
                try fixture.grant(Self.world)
                let outcome = try await fixture.run(Self.scope(fixture), gateway: Self.gateway(fixture))
                #expect(outcome.status == .succeeded)
                #expect(outcome.counters.checked == Self.world.count)
                return try Self.decided(fixture, run: outcome.runID)
            }
        }
        #expect(clean.duplicates.isEmpty)
        #expect(clean.verdicts.count == Self.world.count)
        // Most grants are paged; none of the paged verdicts sits in the checks table.
        #expect(clean.paged > Self.world.count / 2)
        #expect(clean.pagedInChecksTable == 0)
        #expect(clean.verdicts.values.filter { $0 == "no_refund_reported" }.count == clean.paged)

        let resumed = try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world) { fixture in
                try fixture.grant(Self.world)
                var attempts = 0
                var outcome: CheckingOutcome
                var checked = 0
                repeat {
                    attempts += 1
                    let stop = StopSignal()
                    let stopping = StopAfterDecisions(limit: stopAfter, inner: Self.gateway(fixture), stop: stop)
                    outcome = try await fixture.run(Self.scope(fixture), gateway: stopping, stop: stop)
                    checked += outcome.counters.checked
                } while outcome.status == .interrupted && attempts < 100
                #expect(outcome.status == .succeeded)
                #expect(attempts > 1)
                // Each grant was decided by exactly one attempt.
                #expect(checked == Self.world.count)
                #expect(outcome.counters.verdicts.values.reduce(0, +) == Self.world.count)
                return try Self.decided(fixture, run: outcome.runID)
            }
        }
        #expect(resumed.verdicts == clean.verdicts)
        #expect(resumed.duplicates.isEmpty)
        #expect(resumed.ledger == clean.ledger)
        #expect(resumed.paged == clean.paged)
        #expect(resumed.pagedInChecksTable == 0)
    }

    @Test("grants an attempt left unverified are taken over by the rerun's pages: one check each, and the report counts them once")
    func unverifiedThenPaged() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            var records = Array(Self.world.prefix(60))
            for index in records.indices where index % 2 == 1 { records[index].bundleId = "com.second.game" }
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                fixture.simulator.update([
                    .app(
                        AppRecord(
                            bundleId: "com.second.game", appAppleId: 2, issuerId: JobFixture.issuerID,
                            keys: [.init(keyId: JobFixture.keyID, publicKey: fixture.key.publicKey.pemRepresentation)]))
                ])
                let logger = Logger(label: "test")
                let first = try await fixture.run(
                    Self.scope(fixture),
                    gateway: NotificationFeedGateway(apps: fixture.apps(), auditShare: 0.2, auditSalt: "pages", logger: logger))
                #expect(first.status == .incomplete)
                #expect(first.counters.unverified == 30)  // no credentials for the second app yet

                let both = fixture.apps(bundles: [JobFixture.bundleID, "com.second.game"])
                let second = try await fixture.run(
                    Self.scope(fixture), gateway: NotificationFeedGateway(apps: both, auditShare: 0.2, auditSalt: "pages", logger: logger))
                #expect(second.runID == first.runID)
                #expect(second.status == .succeeded)
                #expect(second.counters.checked == 30)
                let decided = try Self.decided(fixture, run: second.runID)
                #expect(decided.duplicates.isEmpty)
                #expect(decided.verdicts.count == 60)
                #expect(!decided.verdicts.values.contains("unverified"))
                #expect(decided.pagedInChecksTable == 0)
                #expect(second.counters.verdicts.values.reduce(0, +) == 60)
                let store = ReportStore(fixture.connection)
                #expect(try store.verdictCounts([second.runID]).values.reduce(0, +) == 60)
            }
        }
    }
}

/// Asks the run to stop once `limit` grants were answered, with a request or from the feed in line (a
/// SIGTERM mid-run, wherever it lands).
final class StopAfterDecisions: AppleGateway {
    let limit: Int
    let inner: any AppleGateway
    let stop: StopSignal
    private let count = Atomic<Int>(0)

    init(limit: Int, inner: any AppleGateway, stop: StopSignal) {
        self.limit = limit
        self.inner = inner
        self.stop = stop
    }

    var statistics: AppStoreAPICounters { inner.statistics }
    func prepare(_ context: RunContext) async throws { try await inner.prepare(context) }
    func contribute(to counters: inout RunCounters) { inner.contribute(to: &counters) }
    func finish() async throws { try await inner.finish() }

    func localAnswer(for grant: Grant, ledger: LedgerHistory) -> AppleAnswer? {
        let answer = inner.localAnswer(for: grant, ledger: ledger)
        if answer != nil { counted() }
        return answer
    }

    func answer(for grant: Grant, ledger: LedgerHistory) async -> AppleAnswer {
        let answer = await inner.answer(for: grant, ledger: ledger)
        counted()
        return answer
    }

    private func counted() {
        if count.add(1, ordering: .relaxed).newValue == limit { stop.request() }
    }
}
