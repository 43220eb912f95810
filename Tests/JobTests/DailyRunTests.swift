import AppStore
import AppStoreDriver
import AppStoreSimulator
import Foundation
import GooglePlayDriver
import Job
import Logging
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

/// The daily run (`--strategy notified-refunds`, `clawback run --daily`): what the refund feed names since
/// the last daily run, each checked per transaction; the monthly run after it writes nothing it wrote.
@Suite("the daily run")
struct DailyRunTests {
    /// 60 purchases: ten refunded and notified, one refunded and reversed, two refunded but never notified
    /// (no notification URL then: only the monthly run finds them).
    static let world: [TransactionRecord] = {
        var records = (0..<60).map { JobFixture.purchase(String(3_300_000_000 + $0), daysAgo: 20 - Double($0) / 10) }
        for index in 0..<10 { records[index].refund = JobFixture.refund(daysAgo: 12 - Double(index)) }
        records[10].refund = JobFixture.refund(daysAgo: 9, reversedDaysAgo: 4)
        for index in 11..<13 {
            records[index].refund = JobFixture.refund(daysAgo: 6)
            records[index].refund?.notified = false
        }
        return records
    }()

    static func daily(_ fixture: JobFixture) async throws -> CheckingOutcome {
        let scope = RunScope(selection: GrantSelection(window: fixture.window), strategy: .notifiedRefunds, dryRun: false)
        return try await fixture.run(scope, gateway: NotifiedRefundsGateway(apps: fixture.apps(), logger: Logger(label: "test")))
    }

    @Test("checks exactly what the feed names, each per transaction, as the reference does; the monthly run after it writes only the rest")
    func dailyThenMonthly() async throws {
        let reference = try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world) { fixture in
                try fixture.grant(Self.world)
                let outcome = try await fixture.run()
                return (try fixture.verdicts(run: outcome.runID), try fixture.ledgerCount())
            }
        }
        #expect(reference.1 == 12)

        try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world) { fixture in
                try fixture.grant(Self.world)
                let daily = try await Self.daily(fixture)
                #expect(daily.status == .succeeded)
                // The eleven the feed names, not the 49 others, nor the two refunds never notified.
                #expect(daily.counters.grantsInScope == 11)
                #expect(daily.counters.checked == 11)
                let verdicts = try fixture.verdicts(run: daily.runID)
                #expect(Set(verdicts.keys) == Set((0..<11).map { String(3_300_000_000 + $0) }))
                for (transaction, verdict) in verdicts { #expect(reference.0[transaction] == verdict, "\(transaction)") }
                // Three feeds a page each in two environments, and one Get Transaction Info per grant named.
                #expect(daily.counters.storeRequests == 6 + 11)
                #expect(try fixture.ledgerCount() == 10)

                // The monthly run checks every grant and writes only the two refunds the feed never named.
                let monthly = try await fixture.run()
                #expect(monthly.status == .succeeded)
                #expect(monthly.counters.checked == 60)
                #expect(monthly.counters.newLedgerEntries == 2)
                #expect(monthly.counters.actions[.alreadyRecorded] == 10)
                #expect(try fixture.ledgerCount() == reference.1)
                #expect(try fixture.verdicts(run: monthly.runID) == reference.0)
            }
        }
    }

    /// The window's report as finance reads it.
    static func windowReport(_ fixture: JobFixture) throws -> WindowReport {
        try WindowReport(fixture.window, on: fixture.connection)
    }

    @Test("the window's report is the same whether daily runs wrote its clawbacks or the monthly run did")
    func sameWindowReport() async throws {
        let monthlyOnly = try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world) { fixture in
                try fixture.grant(Self.world)
                _ = try await fixture.run()
                return try Self.windowReport(fixture)
            }
        }
        #expect(monthlyOnly.rows.count == 12)  // the reversed one is ok: Apple shows no refund now
        #expect(monthlyOnly.rows.filter { $0.contains("|clawback_created|") }.count == 12)
        let withDaily = try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world) { fixture in
                try fixture.grant(Self.world)
                _ = try await Self.daily(fixture)
                _ = try await fixture.run()
                return try Self.windowReport(fixture)
            }
        }
        #expect(withDaily.rows == monthlyOnly.rows)
        #expect(withDaily.counts == monthlyOnly.counts)
    }

    @Test("reads the feed from where the last daily run that succeeded started; a run whose feed could not be read whole does not move that point")
    func readsFromTheLastSuccess() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: Self.world) { fixture in
                try fixture.grant(Self.world)
                let first = try await Self.daily(fixture)
                #expect(first.status == .succeeded)
                #expect(first.counters.checked == 11)

                // As if the first daily run had started five and a half days ago; a refund two days ago, which only a run
                // reading from a day before that start finds (a failed run's start would be too late).
                try fixture.connection.execute(
                    "UPDATE clawback.runs SET started_at = started_at - interval '132 hours' WHERE run_id = \(first.runID)")
                var refunded = Self.world[40]
                refunded.refund = JobFixture.refund(daysAgo: 2)
                fixture.simulator.update([.transaction(refunded)])

                // The sandbox refuses the credentials: its feeds are not read whole, so the run fails.
                var faults = FaultPlan()
                faults.unauthorizedEnvironments = ["Sandbox"]
                fixture.simulator.setFaults(faults)
                await #expect(throws: CheckingFailure.self) { try await Self.daily(fixture) }
                #expect(try fixture.ledgerCount() == 10)

                fixture.simulator.setFaults(FaultPlan())
                let second = try await Self.daily(fixture)
                #expect(second.status == .succeeded)
                #expect(second.runID != first.runID)
                let checked = try fixture.verdicts(run: second.runID)
                #expect(checked[refunded.transactionId] == "refunded")
                // Besides it, only what was notified from six and a half days ago on (refunds 6 to 9, the reversal).
                #expect(checked.count == 6)
                #expect(try fixture.ledgerCount() == 11)
            }
        }
    }
}
