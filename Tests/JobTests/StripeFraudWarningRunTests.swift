import AppStoreSimulator
import Foundation
import Job
import Logging
import Postgres
import Reconciliation
import Storage
import StripeDriver
import TestSupport
import Testing

/// `stripe.early_fraud_warnings`: with `show` (the default) a payment Radar warned about is read as any
/// other; with `review`, one Stripe shows neither refunded nor disputed, never taken from, is a review (never
/// units), in the monthly run's lists, in a payment asked alone and in the daily run, whose events name it;
/// a warned payment refunded or disputed (lost, won, an inquiry) is read by the table.
@Suite("Stripe: early fraud warnings in the runs", .serialized)
struct StripeFraudWarningRunTests {
    static let now = StripeRunTests.now

    static func world() -> StripeWorld {
        func warned(_ record: StripePaymentRecord, daysAfter: Double = 1) -> StripePaymentRecord {
            var record = record
            record.fraudWarnings = [StripeFraudWarningRecord(id: "issfr_" + record.id.dropFirst(3), created: record.created + daysAfter * 86_400)]
            return record
        }
        return StripeWorld(
            keys: [StripeRunTests.key],
            payments: [
                warned(StripeRunTests.payment(1, daysAgo: 10)),
                warned(StripeRunTests.payment(2, daysAgo: 11, refunds: [(1000, "succeeded")])),
                StripeRunTests.payment(3, daysAgo: 12),
                warned(StripeRunTests.payment(4, daysAgo: 13, disputes: [(1000, "lost")])),
                warned(StripeRunTests.payment(5, daysAgo: 14, disputes: [(1000, "won")])),  // disputed: the table's, not a review
                warned(StripeRunTests.payment(6, daysAgo: 15, disputes: [(1000, "warning_closed")])),  // an inquiry is a dispute too
            ])
    }

    @Test("show reads warned payments as any other; review makes the untouched ones a review in the monthly and the daily run, never units")
    func reviewed() async throws {
        StoreDrivers.register(StripeDriver())
        try await StripeShopServer.with(Self.world(), threads: 2) { shop in
            let directory = shop.directory
            func configuration(_ policy: String?) throws -> ClawbackConfiguration {
                try shop.configuration(extra: policy.map { ["early_fraud_warnings: \($0)"] } ?? [])
            }
            #expect(throws: ConfigurationErrors.self) { try configuration("refund") }
            let window = try ReconciliationWindow(start: Self.now - 45 * 86_400, end: Self.now + 3_600)
            let expected: [String: (Verdict, Int64)] = [
                "pi_1": (.mismatch, 0), "pi_2": (.refunded, 100), "pi_3": (.ok, 0), "pi_4": (.refunded, 100), "pi_5": (.ok, 0), "pi_6": (.ok, 0),
            ]
            for policy in [nil, "show", "review"] {
                try await TestPostgres.withScratchDatabaseAsync { name in
                    let connection = try TestPostgres.connect(database: name)
                    try Migrator().migrate(on: connection.storage)
                    try StripeRunTests.importGrants(
                        (1...6).map { (id: "pi_\($0)", daysAgo: Double(9 + $0), environment: "Production") }, on: connection)
                    let database = try TestPostgres.configuration(database: name).storage
                    func request(_ strategy: RunStrategy) -> MonthlyRun.Request {
                        MonthlyRun.Request(
                            selection: GrantSelection(window: window), strategy: strategy, dryRun: false, resumeRunID: nil, concurrency: nil,
                            batchSize: 5, auditShare: 0, metricsFile: nil, reports: .init(directory: directory.path),
                            origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []), database: database)
                    }
                    let settings = try configuration(policy)
                    let monthly = try await MonthlyRun.perform(
                        request(StripeStore.payments), configuration: settings, logger: Logger(label: "test"), progress: nil, stop: StopSignal())
                    let found = try StripeRunTests.verdicts(connection, run: monthly.run.runID)
                    for (id, want) in expected {
                        let wanted = policy == "review" || id != "pi_1" ? want : (.ok, 0)
                        #expect(
                            found[id]?.0 == wanted.0 && found[id]?.1 == wanted.1, "\(policy ?? "default"): \(id) \(String(describing: found[id]))")
                    }
                    let reasons = try connection.query("SELECT transaction_id, reason FROM clawback.ledger WHERE kind = 'review'").rows.map {
                        "\(try $0.decode(String.self, at: 0)) \(try $0.decode(String?.self, at: 1) ?? "")"
                    }
                    #expect(policy != "review" || reasons == ["pi_1 stripe_early_fraud_warning"], "\(reasons)")
                    guard policy == "review" else { return }
                    // The daily run: the warning's event names pi_1, asked alone with its warnings; nothing new is written.
                    let daily = await DailyRun.perform(
                        request(StripeStore.events), windows: [window], configuration: settings, logger: Logger(label: "test"), progress: nil,
                        stop: StopSignal())
                    let pass = try #require(daily.passes.first)
                    let again = try StripeRunTests.verdicts(connection, run: pass.run.runID)
                    #expect(again["pi_1"]?.0 == .mismatch && again["pi_3"] == nil, "\(again)")
                    #expect(pass.run.counters.newLedgerEntries == 0)
                }
            }
        }
    }
}
