import Foundation
import GooglePlay
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// Google Play's daily run (`clawback run --daily --strategy google-orders`): the orders of the purchases whose
/// voids the sweep kept since the last daily run, each decided from Google's own statement of the order, as
/// the monthly run decides it; the monthly run after it writes nothing new for them, and the window's report
/// is the same with or without daily runs.
@Suite("Google Play: the daily run", .serialized)
struct GoogleDailyRunTests {
    // swift-format-ignore: NeverForceUnwrap
    static let window = GoogleOrdersRunTests.window!

    /// Per purchase token: the verdict of `runID` (every check, the daily run's few or the monthly run's all).
    static func verdicts(_ setup: GoogleJobFixture, run runID: Int64) throws -> [String: String] {
        try GoogleOrdersRunTests.state(setup, run: runID).mapValues(\.verdict)
    }

    static func ledger(_ setup: GoogleJobFixture) throws -> [String] {
        try setup.connection.query("SELECT transaction_id || ' ' || idempotency_key || ' ' || units FROM clawback.ledger ORDER BY 1").rows
            .map { try $0.decode(String.self, at: 0) }
    }

    static func keptTokens(_ setup: GoogleJobFixture) throws -> Set<String> {
        Set(
            try setup.connection.query("SELECT DISTINCT purchase_token FROM clawback.google_voided_purchases").rows.map {
                try $0.decode(String.self, at: 0)
            })
    }

    @Test(
        "checks exactly the purchases whose voids the sweep kept, as the monthly run decides them; the monthly run after writes only the rest, and the window's report is the monthly-only one"
    )
    func dailyThenMonthly() async throws {
        var reference: (verdicts: [String: String], ledger: [String], report: [String], counts: [Verdict: Int]) = ([:], [], [], [:])
        try await GoogleOrdersRunTests.withGrantedWorld(orders: 600, seed: 23) { setup, http, _, _ in
            let (monthly, _) = try await GoogleOrdersRunTests.run(setup, http: http)
            let report = try WindowReport(Self.window, on: setup.connection)
            reference = (try Self.verdicts(setup, run: monthly.runID), try Self.ledger(setup), report.rows, report.counts)
        }
        #expect(reference.ledger.count > 20)

        try await GoogleOrdersRunTests.withGrantedWorld(orders: 600, seed: 23) { setup, http, _, _ in
            let kept = try Self.keptTokens(setup)
            #expect(kept.count > 10, "the sweep kept voids to name")
            let (daily, calls) = try await GoogleOrdersRunTests.run(setup, http: http, daily: true)
            #expect(daily.status == .succeeded || daily.status == .incomplete)
            // Only the purchases the kept voids name, each with the verdict the monthly run gives it.
            let checked = try Self.verdicts(setup, run: daily.runID)
            #expect(Set(checked.keys) == kept.intersection(reference.verdicts.keys))
            #expect(daily.counters.grantsInScope == checked.count)
            for (token, verdict) in checked { #expect(reference.verdicts[token] == verdict, "\(token)") }
            #expect(calls.requests < 10, "the named orders in batches, not the window's \(reference.verdicts.count)")
            let afterDaily = try Self.ledger(setup)
            #expect(afterDaily.count > 10 && afterDaily.count < reference.ledger.count)
            #expect(Set(afterDaily).isSubset(of: Set(reference.ledger)), "the same keys the monthly run writes")

            // The monthly run checks every grant and writes only what no kept void named.
            let (monthly, _) = try await GoogleOrdersRunTests.run(setup, http: http)
            #expect(monthly.counters.newLedgerEntries == reference.ledger.count - afterDaily.count)
            #expect(try Self.ledger(setup) == reference.ledger)
            #expect(try Self.verdicts(setup, run: monthly.runID) == reference.verdicts)
            let report = try WindowReport(Self.window, on: setup.connection)
            #expect(report.rows == reference.report)
            #expect(report.counts == reference.counts)
        }
    }

    @Test("reads the voids kept since the last daily run that succeeded started, less a day; a rerun writes nothing")
    func readsFromTheLastSuccess() async throws {
        try await GoogleOrdersRunTests.withGrantedWorld(orders: 300, seed: 29) { setup, http, orders, _ in
            let (first, _) = try await GoogleOrdersRunTests.run(setup, http: http, daily: true)
            #expect(first.counters.checked > 0)
            let entries = try Self.ledger(setup)
            // Within the day's margin: the same purchases again, nothing new written.
            let (again, _) = try await GoogleOrdersRunTests.run(setup, http: http, daily: true)
            #expect(again.counters.checked == first.counters.checked && again.counters.newLedgerEntries == 0)
            #expect(try Self.ledger(setup) == entries)

            // As if both runs had started three days ago and the sweep had kept every void two days before that;
            // today it keeps one more, of an order Google still shows processed.
            try setup.connection.execute("UPDATE clawback.runs SET started_at = started_at - interval '3 days'")
            try setup.connection.execute("UPDATE clawback.google_voided_purchases SET read_at = read_at - interval '5 days'")
            let processed = try #require(orders.first { $0.state == "PROCESSED" && $0.voids == nil })
            try setup.connection.execute(
                """
                INSERT INTO clawback.google_voided_purchases (package_name, purchase_token, order_id, voided_at, voided_source, voided_reason)
                VALUES (\(processed.packageName), \(processed.purchaseToken), \(processed.orderId), now() - interval '1 hour', 0, 1)
                """)
            let (third, _) = try await GoogleOrdersRunTests.run(setup, http: http, daily: true)
            let checked = try Self.verdicts(setup, run: third.runID)
            #expect(checked == [processed.purchaseToken: "mismatch"], "a void of an order Google shows processed is a person's")
        }
    }
}
