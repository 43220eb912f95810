import AppStore
import AppStoreSimulator
import Foundation
import Logging
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// The notifications strategy keeps its `no_refund_reported` checks in check pages (migration 0011). Held
/// to the same properties as check rows: a run stopped anywhere and resumed until done decides every grant
/// exactly once and exactly as a run that was never stopped.
@Suite("notifications runs keep their unflagged checks in pages")
struct CheckPagesTests {
    /// 400 purchases over 40 days, three at each purchase time, one in seven refunded (some prorated, some
    /// reversed), one in nine in the sandbox (those bought more than 30 days ago are before the sandbox feed's
    /// reach: asked per transaction). `grant` moves one grant in three off the whole second.
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
            String(3_100_000_000 + index), daysAgo: 1 + Double(index / 3) / 10, refund: refund,
            environment: index % 9 == 0 ? "Sandbox" : "Production")
    }

    /// Grants the world, then gives one grant in three a purchase time with microseconds (the grants table
    /// keeps them; Apple's dates are milliseconds and are not compared), so that pages span ties and
    /// sub-second times alike.
    static func grant(_ fixture: JobFixture, _ records: [TransactionRecord]) throws {
        try fixture.grant(records)
        try fixture.connection.execute(
            """
            UPDATE clawback.grants SET purchased_at = purchased_at + interval '0.123457 seconds' * (transaction_id::bigint % 3)
            WHERE transaction_id::bigint % 3 <> 0
            """)
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
        try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world) { fixture in
                try Self.grant(fixture, Self.world)
                let first = try await fixture.run(Self.scope(fixture), gateway: Self.gateway(fixture))
                #expect(first.status == .succeeded)
                #expect(first.counters.checked == Self.world.count)
                let clean = try Self.decided(fixture, run: first.runID)
                #expect(clean.duplicates.isEmpty)
                #expect(clean.verdicts.count == Self.world.count)
                // Most grants are paged, under both environments' statements; none sits in the checks table.
                #expect(clean.paged > Self.world.count / 2)
                #expect(clean.pagedInChecksTable == 0)
                #expect(clean.verdicts.values.filter { $0 == "no_refund_reported" }.count == clean.paged)

                // The same scope again in the same database (a new run: the first is finished), stopped and
                // resumed until done: the first run's pages must not count for it, and it writes no entry twice.
                var attempts = 0
                var outcome: CheckingOutcome
                var checked = 0
                repeat {
                    attempts += 1
                    let stop = StopSignal()
                    let stopping = StopAfter(limit: stopAfter, inner: Self.gateway(fixture), stop: stop)
                    outcome = try await fixture.run(Self.scope(fixture), gateway: stopping, stop: stop)
                    checked += outcome.counters.checked
                } while outcome.status == .interrupted && attempts < 100
                #expect(outcome.runID != first.runID)
                #expect(outcome.status == .succeeded)
                #expect(attempts > 1)
                // Each grant was decided by exactly one attempt.
                #expect(checked == Self.world.count)
                #expect(outcome.counters.verdicts.values.reduce(0, +) == Self.world.count)
                let resumed = try Self.decided(fixture, run: outcome.runID)
                #expect(resumed.verdicts == clean.verdicts)
                #expect(resumed.duplicates.isEmpty)
                #expect(resumed.ledger == clean.ledger)
                #expect(resumed.paged == clean.paged)
                #expect(resumed.pagedInChecksTable == 0)
            }
        }
    }

    @Test("grants an attempt left unverified are taken over by the rerun's pages: one check each, and the report counts them once")
    func unverifiedThenPaged() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            var records = Array(Self.world.prefix(60))
            for index in records.indices where index % 2 == 1 { records[index].bundleId = "com.second.game" }
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try Self.grant(fixture, records)
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
                // The second app's grants the first attempt left unverified are in the rerun's pages now.
                let takenOver = try fixture.connection.query(
                    """
                    SELECT count(*) FROM clawback.run_checks
                    WHERE run_id = \(second.runID) AND in_page AND bundle_id = 'com.second.game'
                    """
                ).first?.decode(Int.self, at: 0)
                let silentSecond = decided.verdicts.filter { id, verdict in
                    verdict == "no_refund_reported" && (Int64(id) ?? 0) % 2 == 1
                }.count
                #expect(silentSecond > 0)
                #expect(takenOver == silentSecond)
                #expect(second.counters.verdicts.values.reduce(0, +) == 60)
                let store = ReportStore(fixture.connection.storage)
                #expect(try store.verdictCounts([second.runID]).values.reduce(0, +) == 60)
            }
        }
    }

    @Test("a report over several runs: a later feed's silence never hides an earlier run's review or refund, and counts each purchase once")
    func mergedReport() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let apple = Array(Self.world.prefix(30))
            // Granted but unknown to Apple, and granted as another product than Apple sold.
            let unknown = JobFixture.purchase("3199999999", daysAgo: 2)
            try await JobFixture.with(database: database, transactions: apple) { fixture in
                try Self.grant(fixture, apple + [unknown])
                try fixture.connection.execute("UPDATE clawback.grants SET product_id = 'gems_6500' WHERE transaction_id = '3100000001'")
                let reference = try await fixture.run(fixture.scope())
                #expect(reference.status == .succeeded)
                let feed = NotificationFeedGateway(apps: fixture.apps(), sample: ["3100000002"], logger: Logger(label: "test"))
                let later = try await fixture.run(Self.scope(fixture), gateway: feed)
                #expect(later.status == .succeeded)
                let laterVerdicts = try fixture.verdicts(run: later.runID)
                #expect(laterVerdicts["3199999999"] == "no_refund_reported")
                #expect(laterVerdicts["3100000001"] == "no_refund_reported")

                let store = ReportStore(fixture.connection.storage)
                var flagged: [String: String] = [:]
                try store.flagged([reference.runID, later.runID], asOf: Date()) { flagged[$0.transactionID] = $0.verdict.rawValue }
                #expect(flagged["3199999999"] == "unknown_to_apple")
                #expect(flagged["3100000001"] == "mismatch")
                // Every refund of the reference is still listed, once.
                let refunded = Set(try fixture.verdicts(run: reference.runID).filter { $0.value == "refunded" }.keys)
                #expect(!refunded.isEmpty)
                #expect(refunded.isSubset(of: Set(flagged.keys)))
                let counts = try store.verdictCounts([reference.runID, later.runID])
                #expect(counts.values.reduce(0, +) == 31)
                #expect(counts[.unknownToApple] == 1)
                #expect(counts[.mismatch] == 1)
                // Where the reference confirmed the purchase, its ok stands over the later run's silence.
                #expect(counts[.noRefundReported] == nil)
                #expect(counts[.ok] == 31 - counts.filter { $0.key != .ok }.values.reduce(0, +))
            }
        }
    }
}
