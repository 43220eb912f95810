import AppStoreDriver
import AppStoreSimulator
import Foundation
import GooglePlayDriver
import HTTP
import Job
import Logging
import Postgres
import Reconciliation
import Storage
import StripeDriver
import TestSupport
import Testing

/// Stripe, the third store, through the real monthly run against the simulator over loopback: every
/// refund status and dispute stage read by docs/stripe.md's table, a payment the window's lists miss asked
/// alone, a payment Stripe does not know for a person, zero-decimal amounts; a refund that fails later gives
/// its units back, a pending one waits until final; each ledger entry once, with 429s and 500s on the way.
@Suite("Stripe: the monthly re-check of a web shop's payments", .serialized)
struct StripeRunTests {
    static let shop = "web.shop.example"
    static let key = "rk_test_clawback"
    static let units: Int64 = 100
    static let now = Date()

    /// Payment `index`, created `daysAgo` days ago, of `amount` in `currency`.
    static func payment(
        _ index: Int, daysAgo: Double, amount: Int64 = 1000, currency: String = "eur", livemode: Bool = true, status: String = "succeeded",
        refunds: [(Int64, String)] = [], disputes: [(Int64, String)] = []
    ) -> StripePaymentRecord {
        let created = now - daysAgo * 86_400
        return StripePaymentRecord(
            id: "pi_\(index)", amount: amount, currency: currency, created: created, livemode: livemode, status: status,
            refunds: refunds.enumerated().map { StripeRefundRecord(id: "re_\(index)_\($0)", amount: $1.0, status: $1.1, created: created + 86_400) },
            disputes: disputes.enumerated().map {
                StripeDisputeRecord(id: "dp_\(index)_\($0)", amount: $1.0, status: $1.1, created: created + 2 * 86_400)
            })
    }

    /// The world, and what the re-check should conclude for each payment: the verdict and the units taken back.
    static func world() -> (world: StripeWorld, grants: [(id: String, daysAgo: Double, environment: String)], expected: [String: (Verdict, Int64)]) {
        var payments: [StripePaymentRecord] = []
        var expected: [String: (Verdict, Int64)] = [:]
        func add(_ record: StripePaymentRecord, _ verdict: Verdict, _ units: Int64) {
            payments.append(record)
            expected[record.id] = (verdict, units)
        }
        for index in 0..<12 { add(payment(index, daysAgo: Double(5 + index)), .ok, 0) }
        add(payment(20, daysAgo: 20, refunds: [(1000, "succeeded")]), .refunded, 100)
        add(payment(21, daysAgo: 21, refunds: [(300, "succeeded")]), .refunded, 30)
        add(payment(22, daysAgo: 22, refunds: [(1000, "failed")]), .ok, 0)
        add(payment(23, daysAgo: 23, refunds: [(1000, "pending")]), .unverified, 0)
        add(payment(24, daysAgo: 24, disputes: [(1000, "lost")]), .refunded, 100)
        add(payment(25, daysAgo: 25, disputes: [(1000, "won")]), .ok, 0)
        add(payment(26, daysAgo: 26, disputes: [(1000, "warning_needs_response")]), .ok, 0)
        add(payment(27, daysAgo: 27, disputes: [(1000, "prevented")]), .mismatch, 0)
        add(payment(28, daysAgo: 28, refunds: [(200, "succeeded"), (300, "canceled")], disputes: [(800, "needs_response")]), .refunded, 100)
        add(payment(29, daysAgo: 29, amount: 500, currency: "jpy", refunds: [(250, "succeeded")]), .refunded, 50)
        add(payment(30, daysAgo: 30, amount: 5120, currency: "kwd", refunds: [(1280, "succeeded")]), .refunded, 25)
        add(payment(31, daysAgo: 31, livemode: false), .mismatch, 0)
        add(payment(32, daysAgo: 32, status: "processing"), .unverified, 0)
        add(payment(33, daysAgo: 33, status: "canceled"), .mismatch, 0)
        // Created long before the window the grant is in (the game recorded it late): not in the window's
        // lists, asked alone.
        add(payment(34, daysAgo: 200, refunds: [(1000, "succeeded")]), .refunded, 100)
        var grants = payments.map { (id: $0.id, daysAgo: min(($0.created.distance(to: now)) / 86_400, 40), environment: "Production") }
        grants.append((id: "pi_unknown", daysAgo: 12, environment: "Production"))
        expected["pi_unknown"] = (.unknownToStore, 0)
        return (StripeWorld(keys: [key], payments: payments), grants, expected)
    }

    static func importGrants(_ grants: [(id: String, daysAgo: Double, environment: String)], on connection: PostgresConnection) throws {
        var lines = Data()
        for (index, grant) in grants.enumerated() {
            let line: [String: Any] = [
                "store": "stripe", "transaction_id": grant.id, "bundle_id": shop, "product_id": "gems_100", "environment": grant.environment,
                "player_id": "player-\(index % 7)", "units_granted": units,
                "purchased_at": ISO8601DateFormatter().string(from: now - grant.daysAgo * 86_400 + 60),
            ]
            lines += try JSONSerialization.data(withJSONObject: line) + Data("\n".utf8)
        }
        let outcome = try GrantImport.importJSONLines(lines, skipInvalid: false, on: connection.storage)
        #expect(outcome.invalid.isEmpty, "\(outcome.invalid)")
    }

    /// Each grant's verdict in `run`, and the units its ledger entries take (reviews aside).
    static func verdicts(_ connection: PostgresConnection, run: Int64) throws -> [String: (Verdict, Int64)] {
        let rows = try connection.query(
            """
            SELECT c.transaction_id, c.verdict,
                   coalesce((SELECT sum(units) FROM clawback.ledger l WHERE l.transaction_id = c.transaction_id AND l.kind <> 'review'), 0)
            FROM clawback.run_checks c WHERE c.run_id = \(run)
            """
        ).rows
        return Dictionary(
            uniqueKeysWithValues: try rows.map {
                (
                    try $0.decode(String.self, at: 0),
                    (try #require(Verdict(rawValue: try $0.decode(String.self, at: 1))), try $0.decode(Int64.self, at: 2))
                )
            })
    }

    @Test("every refund status and dispute stage ends on the ledger as the table says, once, through 429s and 500s")
    func monthlyRecheck() async throws {
        StoreDrivers.register(StripeDriver())
        let (world, grants, expected) = Self.world()
        try await StripeShopServer.with(world, threads: 2) { shop in
            let (simulator, directory) = (shop.simulator, shop.directory)
            let configuration = try shop.configuration()
            try await TestPostgres.withScratchDatabaseAsync { name in
                let connection = try TestPostgres.connect(database: name)
                try Migrator().migrate(on: connection.storage)
                try Self.importGrants(grants, on: connection)
                let database = try TestPostgres.configuration(database: name)
                func run() async throws -> MonthlyRun.Outcome {
                    let request = MonthlyRun.Request(
                        selection: GrantSelection(window: try ReconciliationWindow(start: Self.now - 45 * 86_400, end: Self.now + 3_600)),
                        strategy: StripeStore.payments, dryRun: false, resumeRunID: nil, concurrency: nil, batchSize: 5, auditShare: 0,
                        metricsFile: directory.appendingPathComponent("stripe.prom").path,
                        reports: .init(directory: directory.path), origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []),
                        database: database.storage)
                    do {
                        return try await MonthlyRun.perform(
                            request, configuration: configuration, logger: Logger(label: "test"), progress: nil, stop: StopSignal())
                    } catch {
                        return try #require(error.outcome, "\(error)")
                    }
                }
                simulator.stripe?.setFaults(StripeFaults(rateLimitedShare: 0.05, serverErrorShare: 0.05))
                let first = try await run()
                #expect(first.run.status == .incomplete, "the pending refund and the processing payment stay unverified")
                let found = try Self.verdicts(connection, run: first.run.runID)
                for (id, want) in expected {
                    #expect(found[id]?.0 == want.0 && found[id]?.1 == want.1, "\(id): \(String(describing: found[id])), expected \(want)")
                }
                #expect(simulator.stripe?.requestedVersions.allSatisfy { $0 == "2026-07-29.dahlia" } == true)
                #expect(first.run.counters.storeRequests > 0)

                // The next invocation resumes the incomplete run, asking again only what it left unverified: the
                // pending refund has succeeded, the processing payment too, without a refund.
                simulator.stripe?.update { world in
                    world.payments["pi_23"]?.refunds[0].status = "succeeded"
                    world.payments["pi_32"]?.status = "succeeded"
                    world.payments["pi_32"]?.charges = [StripeChargeRecord(id: "ch_32", amount: 1000, created: Self.now - 31 * 86_400)]
                }
                let resumed = try await run()
                #expect(resumed.run.runID == first.run.runID && resumed.run.status == .succeeded)
                let settled = try Self.verdicts(connection, run: resumed.run.runID)
                #expect(settled["pi_23"]?.0 == .refunded && settled["pi_23"]?.1 == 100)
                #expect(settled["pi_32"]?.0 == .ok)

                // Later, a new run: the full refund failed, so its units are given back.
                simulator.stripe?.update { $0.payments["pi_20"]?.refunds[0].status = "failed" }
                let second = try await run()
                let later = try Self.verdicts(connection, run: second.run.runID)
                #expect(later["pi_20"]?.0 == .refundReversed && later["pi_20"]?.1 == 0, "\(String(describing: later["pi_20"]))")
                #expect(second.run.status == .succeeded)

                // Once: the same run again writes nothing.
                let third = try await run()
                let thirdVerdicts = try Self.verdicts(connection, run: third.run.runID).filter { $0.value.0 != .ok }
                #expect(third.run.status == .succeeded && third.run.counters.newLedgerEntries == 0, "\(thirdVerdicts)")
                let metrics = try String(contentsOfFile: directory.appendingPathComponent("stripe.prom").path, encoding: .utf8)
                #expect(metrics.contains("clawback_stripe_requests{"))
            }
        }
    }

    @Test("the daily run asks only the payments Stripe's events name, and says when 30 days of events cannot cover its span")
    func dailyRun() async throws {
        StoreDrivers.register(StripeDriver())
        // Payments of the last 40 days; two refunded long ago, one 20 days ago.
        var payments = (0..<30).map { Self.payment($0, daysAgo: Double(1 + $0)) }
        payments.append(Self.payment(40, daysAgo: 38, refunds: [(1000, "succeeded")]))
        payments.append(Self.payment(41, daysAgo: 20, refunds: [(500, "succeeded")]))
        try await StripeShopServer.with(StripeWorld(keys: [Self.key], payments: payments), threads: 2) { shop in
            let (simulator, directory) = (shop.simulator, shop.directory)
            let configuration = try shop.configuration()
            let window = try ReconciliationWindow(start: Self.now - 45 * 86_400, end: Self.now + 3_600)
            try await TestPostgres.withScratchDatabaseAsync { name in
                let connection = try TestPostgres.connect(database: name)
                try Migrator().migrate(on: connection.storage)
                try Self.importGrants(
                    payments.map { (id: $0.id, daysAgo: $0.created.distance(to: Self.now) / 86_400, environment: "Production") }, on: connection)
                let database = try TestPostgres.configuration(database: name)
                func daily() async throws -> MonthlyRun.Outcome {
                    let request = MonthlyRun.Request(
                        selection: GrantSelection(window: window), strategy: StripeStore.events, dryRun: false, resumeRunID: nil, concurrency: nil,
                        batchSize: 5, auditShare: 0, metricsFile: directory.appendingPathComponent("stripe-daily.prom").path,
                        reports: .init(directory: directory.path), origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []),
                        database: database.storage)
                    let outcome = await DailyRun.perform(
                        request, windows: [window], configuration: configuration, logger: Logger(label: "test"), progress: nil, stop: StopSignal())
                    #expect(outcome.failure == nil, "\(String(describing: outcome.failure))")
                    return try #require(outcome.passes.first)
                }

                // The window's first daily run reads from its start, 45 days back: Stripe's events reach 30, so the
                // refund of 38 days ago is left to the monthly re-check, and the run says so.
                let first = try await daily()
                let firstVerdicts = try Self.verdicts(connection, run: first.run.runID)
                #expect(firstVerdicts.keys.sorted() == ["pi_41"], "only the payment an event names: \(firstVerdicts.keys.sorted())")
                #expect(firstVerdicts["pi_41"]?.0 == .refunded && firstVerdicts["pi_41"]?.1 == 50)
                #expect(first.run.counters.voidsNotCovered.count == 1)
                let summary = try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: try #require(first.reports).summary)))).rows
                #expect(summary.first { $0["key"] == "stripe_events_not_covered" }?["count"] == "1")
                // A studio with a web shop gets Stripe's disputes beside the shared files, in every run's report.
                #expect(
                    try #require(first.reports).storeTables.map { String($0.split(separator: "-run-").last ?? "") } == [
                        "\(first.run.runID)-stripe-disputes.csv", "\(first.run.runID)-stripe-fraud-warnings.csv",
                    ])
                #expect(summary.contains { $0["section"] == "stripe_disputes" } == false, "no dispute recorded yet: no rows")

                // Later: a refund an hour ago and a chargeback two hours ago. The next daily run reads from its last
                // success (less a day): those two payments, and the earlier one again, nothing else.
                simulator.stripe?.update { world in
                    world.payments["pi_3"]?.refunds.append(StripeRefundRecord(id: "re_late", amount: 1000, created: Self.now - 3_600))
                    world.payments["pi_4"]?.disputes.append(
                        StripeDisputeRecord(id: "dp_late", amount: 1000, status: "needs_response", created: Self.now - 7_200))
                }
                let second = try await daily()
                let secondVerdicts = try Self.verdicts(connection, run: second.run.runID)
                #expect(Set(secondVerdicts.keys).isSubset(of: ["pi_3", "pi_4", "pi_41"]) && secondVerdicts.keys.contains("pi_3"))
                #expect(secondVerdicts["pi_3"]?.0 == .refunded && secondVerdicts["pi_3"]?.1 == 100)
                #expect(secondVerdicts["pi_4"]?.0 == .refunded && secondVerdicts["pi_4"]?.1 == 100)
                #expect(second.run.counters.voidsNotCovered.isEmpty)
                let metrics = try String(contentsOfFile: directory.appendingPathComponent("stripe-daily.prom").path, encoding: .utf8)
                #expect(metrics.contains("clawback_stripe_daily_requests{"))
            }
        }
    }

    @Test("config check reads each list once with the key, and names the permission a restricted key lacks")
    func configurationCheck() async throws {
        StoreDrivers.register(StripeDriver())
        let world = StripeWorld(
            keys: [Self.key, "rk_live_nodisputes", "rk_live_readonly"],
            keyResources: [
                "rk_live_nodisputes": ["charges", "refunds", "payment_intents", "events"],
                "rk_live_readonly": ["charges", "refunds", "disputes:read", "payment_intents", "events"],
            ],
            payments: [Self.payment(1, daysAgo: 3)])
        try await StripeShopServer.with(world) { shop in
            func lines(key: String, warnings: String = "show") async throws -> [ConfigurationCheck.Line] {
                let configuration = try shop.configuration(key: key, extra: ["early_fraud_warnings: \(warnings)"])
                let http = try HTTPClients.start(for: "the checks", timeout: .seconds(5))
                defer { http.shutdown() }
                return await StripeDriver().checkConfiguration(
                    configuration, http: http, database: DatabaseConfiguration(connectionString: "", statementTimeout: .seconds(1)),
                    logger: Logger(label: "test"))
            }
            let test = try await lines(key: Self.key)
            #expect(test.filter { $0.item.hasPrefix("stripe /v1/") }.allSatisfy { $0.status == .ok } && test.count == 8, "\(test)")
            #expect(test.contains { $0.status == .warning && $0.detail.contains("test-mode") })
            let restricted = try await lines(key: "rk_live_nodisputes")
            let refused = restricted.filter { $0.status == .failed }
            #expect(refused.map(\.item) == ["stripe /v1/disputes"] && refused.first?.detail.contains("Disputes: Read") == true, "\(restricted)")
            let wrong = try await lines(key: "rk_live_unknown")
            #expect(wrong.filter { $0.status == .failed }.count == 7 && wrong.allSatisfy { !$0.detail.isEmpty })
            let readOnly = try await lines(key: "rk_live_readonly")
            #expect(readOnly.allSatisfy { $0.status != .failed }, "\(readOnly)")
            #expect(
                readOnly.contains { $0.item == "stripe /v1/disputes answering" && $0.status == .warning && $0.detail.contains("Disputes: Write") })
            #expect(
                readOnly.contains {
                    $0.item == "stripe /v1/radar/early_fraud_warnings" && $0.status == .warning && $0.detail.contains("Early fraud warnings: Read")
                }, "a key without Radar's permission: warned, not failed")
            let reviewing = try await lines(key: "rk_live_readonly", warnings: "review")
            #expect(
                reviewing.contains { $0.item == "stripe /v1/radar/early_fraud_warnings" && $0.status == .failed && $0.detail.contains("review") },
                "the runs need the warnings to review them: \(reviewing)")
        }
    }
}
