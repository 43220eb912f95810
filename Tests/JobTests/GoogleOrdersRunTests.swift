import AppStore
import AppStoreSimulator
import Foundation
import GooglePlay
import HTTP
import Locking
import Logging
import Postgres
import Reconciliation
import Reports
import Storage
import TestSupport
import Testing

@testable import AppStoreDriver
@testable import GooglePlayDriver
@testable import Job

/// `clawback run --strategy google-orders`: every Google Play grant of a generated world decided as the
/// world says (refunds, chargebacks, quantity- and amount-based partial refunds, cancellations, pending
/// refunds, unknown orders), exactly once however often it runs, and the same with or without the voids
/// the sweep kept, and when stopped and resumed.
@Suite("Google Play: the monthly re-check of Google grants", .serialized)
struct GoogleOrdersRunTests {
    static let package = "com.studio.game"
    static let unitsPerItem: Int64 = 100
    static let end = Date()
    static let window = try? ReconciliationWindow(start: end - 80 * 86_400, end: end + 3_600)

    /// A generated world's orders, plus unknown orders the game granted anyway (Google has no record).
    static func world(orders count: Int, seed: UInt64) throws -> (orders: [GoogleOrderRecord], unknown: [GoogleOrderRecord]) {
        let generated = try GooglePlayWorldGenerator.generate(
            orders: count, start: end - 75 * 86_400, end: end - 3_600, refundRate: 0.3, seed: seed)
        let orders = generated.world.orders.values.sorted { $0.orderId < $1.orderId }.map { order -> GoogleOrderRecord in
            var order = order
            order.packageName = package
            return order
        }
        let unknown = (0..<3).map { index in
            GoogleOrderRecord(
                orderId: "GPA.0000-0000-0000-\(index)", packageName: package, purchaseToken: "unknown-token-\(index)", productId: "gems_100",
                quantity: 1, priceMilli: 990, currency: "EUR", purchaseTime: end - Double(index + 2) * 86_400)
        }
        return (orders, unknown)
    }

    /// What the world says about an order's grant: the verdict and the units taken back.
    /// `coverage`: what the sweep's kept voids covered, where a refund without revoke (no void in the world) shows
    /// as such and is left with the player (`google.refund_without_revoke`'s default).
    static func expected(_ order: GoogleOrderRecord, known: Bool, units: Int64, coverage: GoogleVoidStore.Coverage? = nil)
        -> (verdict: Verdict, units: Int64)
    {
        guard known else { return (.unknownToGoogle, 0) }
        switch order.state {
        case "REFUNDED":
            if order.voids == nil, let coverage, let at = order.refund?.date, coverage.from <= at,
                coverage.until >= at + GoogleOrderReading.voidListingDelay
            {
                return (.refunded, 0)
            }
            return (.refunded, units)
        case "PARTIALLY_REFUNDED":
            if let voided = order.voids?.first?.quantity { return (.refunded, units * Int64(voided) / Int64(order.quantity)) }
            let amount = order.partialRefunds?.reduce(0) { $0 + $1.amountMilli } ?? 0
            return (.refunded, ProratedUnits.compute(units: units, share: RefundedShare(amount, of: order.priceMilli), rule: .nearestHalfUp))
        case "CANCELED": return (.mismatch, 0)
        case "PENDING_REFUND": return (.unverified, 0)
        default: return (.ok, 0)
        }
    }

    /// A generated world's orders (and the unknown ones) granted in a fresh database, a Google client to ask,
    /// and, when `swept`, the void sweep run first as the daily schedule would have.
    static func withGrantedWorld(
        orders count: Int, seed: UInt64, swept: Bool = true,
        _ body: (GoogleJobFixture, HTTPClient, _ orders: [GoogleOrderRecord], _ unknown: [GoogleOrderRecord]) async throws -> Void
    ) async throws {
        let (orders, unknown) = try world(orders: count, seed: seed)
        try await GoogleJobFixture.with(orders, packages: [package]) { setup in
            let http = try HTTPClient(configuration: .init(timeout: .seconds(10)))
            defer { http.shutdown() }
            try grant(orders + unknown, on: setup.connection)
            if swept {
                _ = try await GoogleVoidSweep.perform(
                    database: setup.database.storage, configuration: setup.configuration, logger: Logger(label: "test"))
            }
            try await body(setup, http, orders, unknown)
        }
    }

    static func grant(_ orders: [GoogleOrderRecord], on connection: PostgresConnection) throws {
        var lines = Data()
        for (index, order) in orders.enumerated() {
            let line: [String: Any] = [
                "store": "google_play", "transaction_id": order.purchaseToken, "order_id": order.orderId, "bundle_id": order.packageName,
                "product_id": order.productId, "environment": "Production", "player_id": "player-\(index % 37)",
                "quantity": order.quantity, "units_granted": unitsPerItem * Int64(order.quantity),
                "purchased_at": ISO8601DateFormatter().string(from: order.purchaseTime),
            ]
            lines += try JSONSerialization.data(withJSONObject: line) + Data("\n".utf8)
        }
        let outcome = try GrantImport.importJSONLines(lines, skipInvalid: false, on: connection.storage)
        #expect(outcome.invalid.isEmpty)
    }

    /// One run of the strategy (or, `daily`, of Google's daily run) over the window; `stopAfter` answers, the
    /// run is asked to stop.
    static func run(
        _ setup: GoogleJobFixture, http: HTTPClient, resume: Int64? = nil, stopAfter: Int? = nil,
        concurrency: Int = GoogleOrdersGateway.grantsInFlight, window: ReconciliationWindow? = nil, shard: (Int, Int) = (0, 1),
        daily: Bool = false
    ) async throws -> (CheckingOutcome, GoogleCallStatistics) {
        let apps = try GooglePlayAppsFactory.orders(setup.configuration, http: http)
        let stop = StopSignal()
        let inner: any StoreGateway = daily ? GoogleVoidedOrdersGateway(apps: apps, logger: Logger(label: "test")) : GoogleOrdersGateway(apps: apps)
        let gateway = StoppingGateway(inner: inner, stop: stop, after: stopAfter)
        // swift-format-ignore: NeverForceUnwrap
        let selection = GrantSelection(window: window ?? Self.window!, shardIndex: shard.0, shardCount: shard.1, store: .googlePlay)
        let request = CheckingRequest(
            scope: RunScope(selection: selection, strategy: daily ? .googleVoidedOrders : .googleOrders, dryRun: false),
            origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []), resumeRunID: resume,
            concurrency: concurrency, batchSize: 50, pageSize: 200)
        let session = try DatabaseSession(setup.database.storage)
        let outcome = try await CheckingPipeline(
            request: request, database: session, gateway: gateway, logger: Logger(label: "test"), progress: nil, stop: stop
        ).run()
        if outcome.status == .succeeded { try await session.run { try RunStore.markFinalized(outcome.runID, on: $0) } }
        return (outcome, apps.statistics)
    }

    /// What the sweep's kept voids of the test's package cover (nil: never swept).
    static func coverage(_ setup: GoogleJobFixture) throws -> GoogleVoidStore.Coverage? {
        try GoogleVoidStore.coverage(packageName: package, on: setup.connection.storage)
    }

    /// Per purchase token: the last verdict of `runID` and the units the ledger takes back in all.
    static func state(_ setup: GoogleJobFixture, run runID: Int64) throws -> [String: (verdict: String, units: Int64)] {
        var state: [String: (String, Int64)] = [:]
        for row in try setup.connection.query(
            """
            SELECT c.transaction_id, c.verdict,
                   coalesce((SELECT sum(units) FROM clawback.ledger l WHERE l.transaction_id = c.transaction_id), 0)::bigint
            FROM clawback.checks c WHERE c.run_id = \(runID) AND c.store = 'google_play'
            """
        ).rows {
            state[try row.decode(String.self, at: 0)] = (try row.decode(String.self, at: 1), try row.decode(Int64.self, at: 2))
        }
        return state
    }

    static func expectWorld(
        _ state: [String: (verdict: String, units: Int64)], orders: [GoogleOrderRecord], unknown: [GoogleOrderRecord],
        coverage: GoogleVoidStore.Coverage? = nil
    ) {
        #expect(state.count == orders.count + unknown.count)
        for (order, known) in orders.map({ ($0, true) }) + unknown.map({ ($0, false) }) {
            let want = expected(order, known: known, units: unitsPerItem * Int64(order.quantity), coverage: coverage)
            let got = state[order.purchaseToken]
            #expect(got?.verdict == want.verdict.rawValue && got?.units == want.units, "order \(order.orderId) in state \(order.state)")
        }
    }

    @Test("every grant decided as the world says, chargebacks and fraud named apart, a rerun writing nothing; Google asked in batches")
    func decidesTheWorld() async throws {
        try await Self.withGrantedWorld(orders: 2_400, seed: 11) { setup, http, orders, unknown in
            // Google forgets its voids after 30 days: by the monthly run, those the sweep kept are all there is.
            setup.simulator.update { world in for id in world.orders.keys { world.orders[id]?.voids = nil } }
            // App Store grants in the same table and window: a Google run neither reads nor decides them.
            var apple = Data()
            for index in 0..<40 {
                apple += Data(
                    """
                    {"transaction_id":"20000000\(1000 + index)","bundle_id":"com.studio.game","product_id":"gems_100","environment":"Production",\
                    "player_id":"player-\(index)","quantity":1,"units_granted":100,"purchased_at":"\(ISO8601DateFormatter().string(from: Self.end - 86_400 * 3))"}

                    """.utf8)
            }
            #expect(try GrantImport.importJSONLines(apple, skipInvalid: false, on: setup.connection.storage).inserted == 40)

            let (first, calls) = try await Self.run(setup, http: http)
            #expect(first.counters.grantsInScope == orders.count + unknown.count)
            // Swept for the first time today, the voids reach 30 days back; the window, 80.
            #expect(first.counters.voidsNotCovered.count == 1 && first.counters.voidsNotCovered.first?.contains("after the window's start") == true)
            #expect(
                try setup.connection.query("SELECT count(*) FROM clawback.checks WHERE store <> 'google_play'").first?.decode(Int.self, at: 0) == 0)
            // A pending refund stays unverified: the run is incomplete until Google settles it.
            #expect(first.status == (orders.contains { $0.state == "PENDING_REFUND" } ? .incomplete : .succeeded))
            Self.expectWorld(try Self.state(setup, run: first.runID), orders: orders, unknown: unknown, coverage: try Self.coverage(setup))
            // Three batches of a thousand, and each unknown order isolated by halving (about 2·log2 of its batch).
            #expect(calls.requests >= 3 && calls.requests <= 3 + unknown.count * 2 * 11, "\(calls.requests) calls")

            // Chargebacks and fraud are kept apart from refunds; the exact voided quantity is kept.
            let types = try setup.connection.query(
                "SELECT transaction_id, revocation_type, revoked_quantity FROM clawback.ledger WHERE store = 'google_play' AND kind = 'clawback'"
            ).rows.reduce(into: [String: (String?, Int32?)]()) {
                $0[try $1.decode(String.self, at: 0)] = (try $1.decode(String?.self, at: 1), try $1.decode(Int32?.self, at: 2))
            }
            // Only voids the sweep could still read (Google keeps 30 days) name a reason or a quantity.
            func swept(_ order: GoogleOrderRecord) -> Bool? {
                guard let recorded = order.voids?.first?.recordedAt else { return false }
                let reach = Date() - 30 * 86_400
                return abs(recorded.timeIntervalSince(reach)) < 3_600 ? nil : recorded > reach
            }
            let coverage = try Self.coverage(setup)
            let left = Set(
                orders.filter { $0.state == "REFUNDED" && Self.expected($0, known: true, units: 1, coverage: coverage) == (.refunded, 0) }
                    .map(\.purchaseToken))
            #expect(!left.isEmpty, "refunds without revoke the sweep could tell")
            for order in orders where order.state == "REFUNDED" {
                if left.contains(order.purchaseToken) {
                    #expect(types[order.purchaseToken] == nil, "left with the player: order \(order.orderId)")
                    continue
                }
                guard let swept = swept(order) else { continue }
                let reasons = swept ? order.voids?.map(\.reason) ?? [] : []
                let type =
                    order.refund?.reason == "CHARGEBACK" || reasons.contains(7)
                    ? "CHARGEBACK" : reasons.contains(where: { $0 == 5 || $0 == 6 }) ? "FRAUD" : "REFUND_FULL"
                #expect(types[order.purchaseToken]?.0 == type, "order \(order.orderId)")
            }
            for order in orders where order.state == "PARTIALLY_REFUNDED" {
                guard let swept = swept(order) else { continue }
                #expect(types[order.purchaseToken]?.0 == "REFUND_PRORATED")
                #expect(types[order.purchaseToken]?.1 == (swept ? order.voids?.first?.quantity : nil), "order \(order.orderId)")
            }
            #expect(types.values.contains { $0.0 == "CHARGEBACK" } && types.values.contains { $0.0 == "FRAUD" })
            #expect(types.values.contains { $0.1 != nil } && orders.contains { $0.state == "CANCELED" })

            // Finance's report: every row Google's, the summary's store section footing with the ledger per kind.
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("google-report-\(UUID())")
            defer { try? FileManager.default.removeItem(at: directory) }
            let files = try ReportGenerator.write(
                .run(first.runID), options: .init(directory: directory.path), from: ReportStore(setup.connection.storage))
            let detail = try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: files.detail))))
            #expect(!detail.rows.isEmpty && detail.rows.allSatisfy { $0["store"] == "google_play" })
            // Each row joins to the Play Console by its grant's order id, which the check keeps (the grant may be
            // pruned before a report is written again).
            let granted = Dictionary(
                uniqueKeysWithValues: try setup.connection.query(
                    "SELECT transaction_id, order_id FROM clawback.grants WHERE store = 'google_play' AND order_id IS NOT NULL"
                ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(String.self, at: 1)) })
            // The formula guard quotes a token that starts with "-": unquoted to look it up.
            func token(_ row: [String: String]) -> String { (row["transaction_id"] ?? "").replacingOccurrences(of: "'", with: "") }
            #expect(detail.rows.allSatisfy { (granted[token($0)] ?? "") == $0["order_id"] }, "every Google row has its grant's order id")
            #expect(detail.rows.filter { $0["order_id"]?.isEmpty == false }.count >= detail.rows.count - 2)
            try setup.connection.execute("UPDATE clawback.grants SET order_id = NULL WHERE store = 'google_play'")
            let again = try ReportGenerator.write(
                .run(first.runID), options: .init(directory: directory.path + "-again"), from: ReportStore(setup.connection.storage))
            defer { try? FileManager.default.removeItem(atPath: directory.path + "-again") }
            for (token, order) in granted {
                try setup.connection.execute("UPDATE clawback.grants SET order_id = \(order) WHERE transaction_id = \(token)")
            }
            let kept = try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: again.detail)))).rows
            #expect(kept.map { $0["order_id"] } == detail.rows.map { $0["order_id"] }, "read from the check, not the grant")
            #expect(
                detail.rows.allSatisfy { $0["apple_currency"] == "" && $0["apple_price_informational"] == "" }, "no Google data under Apple's names")
            #expect(detail.rows.contains { $0["store_currency"]?.isEmpty == false && $0["store_price_informational"]?.isEmpty == false })
            #expect(detail.rows.filter { $0["revoked_quantity"]?.isEmpty == false }.count == types.values.filter { $0.1 != nil }.count)
            let summary = try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: files.summary)))).rows.filter { $0["section"] == "store" }
            #expect(summary.allSatisfy { $0["store"] == "google_play" })
            for (kind, type) in [("chargeback", "CHARGEBACK"), ("fraud", "FRAUD"), ("refund", "REFUND_FULL"), ("partial_refund", "REFUND_PRORATED")] {
                let counted = summary.filter { $0["key"] == kind }.reduce(0) { $0 + (Int($1["count"] ?? "") ?? 0) }
                #expect(counted == types.values.filter { $0.0 == type }.count, "\(kind)")
            }
            func counted(_ kind: String) -> Int { summary.filter { $0["key"] == kind }.reduce(0) { $0 + (Int($1["count"] ?? "") ?? 0) } }
            #expect(counted("refund_left_with_player") == left.count)
            #expect(counted("review") == orders.filter { $0.state == "CANCELED" }.count + unknown.count)
            #expect(counted("unverified") == orders.filter { $0.state == "PENDING_REFUND" }.count)

            // Google settles the pending refunds (not refunded after all): the run, resumed, finishes.
            var settled = orders
            for index in settled.indices where settled[index].state == "PENDING_REFUND" { settled[index].state = "PROCESSED" }
            setup.simulator.update { world in for order in settled { world.orders[order.orderId] = order } }
            let (finished, _) = try await Self.run(setup, http: http)
            #expect(finished.runID == first.runID && finished.status == .succeeded)
            Self.expectWorld(try Self.state(setup, run: first.runID), orders: settled, unknown: unknown, coverage: try Self.coverage(setup))

            // The next month's run over the same window decides every grant again and writes nothing.
            let entries = try setup.connection.query("SELECT count(*) FROM clawback.ledger").first?.decode(Int.self, at: 0)
            let (rerun, _) = try await Self.run(setup, http: http)
            #expect(rerun.runID != first.runID && !rerun.resumed && rerun.status == .succeeded)
            #expect(rerun.counters.checked == orders.count + unknown.count && rerun.counters.newLedgerEntries == 0)
            #expect(try setup.connection.query("SELECT count(*) FROM clawback.ledger").first?.decode(Int.self, at: 0) == entries)
            let actions = try setup.connection.query(
                "SELECT DISTINCT action FROM clawback.checks WHERE run_id = \(rerun.runID)"
            ).rows.map { try $0.decode(String.self, at: 0) }
            #expect(Set(actions).isSubset(of: ["none", "already_recorded"]), "\(actions)")
            Self.expectWorld(try Self.state(setup, run: rerun.runID), orders: settled, unknown: unknown, coverage: try Self.coverage(setup))
        }
    }

    @Test(
        "both stores in one database, one bundle id: each store's run decides its own grants exactly as it would alone; the window's report holds both"
    )
    func twoStores() async throws {
        let (orders, unknown) = try Self.world(orders: 1_500, seed: 14)
        // App Store purchases of the same app id, some refunded in full or in part.
        func refund(_ index: Int) -> RefundRecord? {
            guard index % 10 == 0 else { return nil }
            let prorated = index % 20 == 0
            return JobFixture.refund(daysAgo: 2, type: prorated ? "REFUND_PRORATED" : "REFUND_FULL", percentage: prorated ? 25_000 : nil)
        }
        let records: [TransactionRecord] = (0..<300).map { index in
            JobFixture.purchase(String(3_000_001_000 + index), daysAgo: Double(5 + index % 50), refund: refund(index))
        }
        func ledger(_ connection: PostgresConnection, store: String) throws -> [String] {
            try connection.query(
                "SELECT transaction_id || '|' || kind || '|' || units || '|' || idempotency_key FROM clawback.ledger WHERE store = \(store)::clawback.store ORDER BY 1"
            ).rows.map { try $0.decode(String.self, at: 0) }
        }
        let alone = try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                let run = try await fixture.run()
                return (verdicts: try fixture.verdicts(run: run.runID), ledger: try ledger(fixture.connection, store: "app_store"))
            }
        }
        #expect(alone.ledger.count >= 30)
        try await GoogleJobFixture.with(orders, packages: [Self.package]) { setup in
            let http = try HTTPClient(configuration: .init(timeout: .seconds(10)))
            defer { http.shutdown() }
            try await JobFixture.with(database: setup.databaseName, transactions: records) { fixture in
                try fixture.grant(records)
                try Self.grant(orders + unknown, on: setup.connection)
                _ = try await GoogleVoidSweep.perform(
                    database: setup.database.storage, configuration: setup.configuration, logger: Logger(label: "test"))
                let apple = try await fixture.run()
                // The same window as the App Store's run: one report covers both.
                let (google, _) = try await Self.run(setup, http: http, window: fixture.window)
                let inWindow = { (order: GoogleOrderRecord) in order.purchaseTime >= fixture.window.start && order.purchaseTime < fixture.window.end }
                let (windowOrders, windowUnknown) = (orders.filter(inWindow), unknown.filter(inWindow))
                #expect(windowOrders.count < orders.count, "the Google world reaches back past the window")
                #expect(apple.counters.grantsInScope == records.count)
                #expect(google.counters.grantsInScope == windowOrders.count + windowUnknown.count)
                #expect(try fixture.verdicts(run: apple.runID) == alone.verdicts)
                #expect(try ledger(setup.connection, store: "app_store") == alone.ledger)
                Self.expectWorld(
                    try Self.state(setup, run: google.runID), orders: windowOrders, unknown: windowUnknown, coverage: try Self.coverage(setup))

                // Finance's report over the window: both runs, both stores, each row with its store.
                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("two-stores-\(UUID())")
                defer { try? FileManager.default.removeItem(at: directory) }
                let files = try ReportGenerator.write(
                    .window(fixture.window), options: .init(directory: directory.path), from: ReportStore(setup.connection.storage))
                let detail = try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: files.detail)))).rows
                let flagged = try setup.connection.query(
                    "SELECT store::text, count(*) FROM clawback.checks WHERE verdict NOT IN ('ok', 'no_refund_reported') GROUP BY 1"
                ).rows.reduce(into: [String: Int]()) { $0[try $1.decode(String.self, at: 0)] = try $1.decode(Int.self, at: 1) }
                #expect(detail.filter { $0["store"] == "app_store" }.count == flagged["app_store"])
                #expect(detail.filter { $0["store"] == "google_play" }.count == flagged["google_play"])
                let stores = Set(
                    try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: files.summary)))).rows.filter { $0["section"] == "store" }
                        .compactMap { $0["store"] })
                #expect(stores == ["app_store", "google_play"])
            }
        }
    }

    @Test("three shards together decide every grant once, as the world says, and write each entry once")
    func shards() async throws {
        try await Self.withGrantedWorld(orders: 1_200, seed: 15) { setup, http, orders, unknown in
            var state: [String: (verdict: String, units: Int64)] = [:]
            var inScope = 0
            for index in 0..<3 {
                let (run, _) = try await Self.run(setup, http: http, shard: (index, 3))
                inScope += run.counters.grantsInScope
                for (token, decided) in try Self.state(setup, run: run.runID) {
                    #expect(state[token] == nil, "\(token) decided by two shards")
                    state[token] = decided
                }
            }
            #expect(inScope == orders.count + unknown.count)
            Self.expectWorld(state, orders: orders, unknown: unknown, coverage: try Self.coverage(setup))
            let doubled = try setup.connection.query(
                "SELECT count(*) FROM (SELECT transaction_id, idempotency_key FROM clawback.ledger GROUP BY 1, 2 HAVING count(*) > 1) d"
            ).first?.decode(Int.self, at: 0)
            #expect(doubled == 0)
        }
    }

    @Test("without the sweep's voids (a missed sweep), the orders alone take back the same units")
    func ordersAloneTakeTheSameUnits() async throws {
        try await Self.withGrantedWorld(orders: 600, seed: 12, swept: false) { setup, http, orders, unknown in
            let (run, _) = try await Self.run(setup, http: http)
            // The run says what it lacked: no reasons for chargebacks and fraud, no exact quantity refunds.
            #expect(run.counters.voidsNotCovered == ["\(Self.package): never swept whole (clawback google-play sweep-voids)"])
            Self.expectWorld(try Self.state(setup, run: run.runID), orders: orders, unknown: unknown, coverage: try Self.coverage(setup))
        }
    }

    @Test("an order Google answers whose reading stays undecided for one reason in three monthly runs in a row goes to a person, once")
    func undecidedBecomesReview() async throws {
        try await Self.withGrantedWorld(orders: 200, seed: 14) { setup, http, orders, _ in
            let odd = try #require(orders.first { $0.state == "PROCESSED" })
            setup.simulator.update { $0.orders[odd.orderId]?.state = "IN_LIMBO" }
            func window(_ days: Double) throws -> ReconciliationWindow {
                try ReconciliationWindow(start: Self.end - days * 86_400, end: Self.end + 3_600)
            }
            // Three monthly runs, each of its own window; a rerun of a window counts once.
            for (days, expected) in [(82.0, "unverified"), (82.0, "unverified"), (81.0, "unverified"), (80.0, "mismatch"), (80.0, "mismatch")] {
                let (run, _) = try await Self.run(setup, http: http, window: try window(days))
                #expect(try Self.state(setup, run: run.runID)[odd.purchaseToken]?.verdict == expected, "window of \(days) days")
            }
            let reviews = try setup.connection.query(
                "SELECT idempotency_key, units FROM clawback.ledger WHERE transaction_id = \(odd.purchaseToken)"
            ).rows.map { "\(try $0.decode(String.self, at: 0)) \(try $0.decode(Int64.self, at: 1))" }
            #expect(reviews == ["review:google_order_undecided 0"])
        }
    }

    @Test("a run stopped part way and resumed ends as one clean run")
    func stoppedAndResumed() async throws {
        try await Self.withGrantedWorld(orders: 1_500, seed: 13) { setup, http, orders, unknown in
            // Few in flight, so that the stop leaves most grants unasked.
            let (stopped, _) = try await Self.run(setup, http: http, stopAfter: 400, concurrency: 100)
            #expect(stopped.status == .interrupted)
            #expect(stopped.counters.checked < (orders.count + unknown.count) / 2, "\(stopped.counters.checked) checked before the stop")
            let (resumed, _) = try await Self.run(setup, http: http, resume: stopped.runID)
            #expect(resumed.runID == stopped.runID && resumed.resumed)
            Self.expectWorld(try Self.state(setup, run: resumed.runID), orders: orders, unknown: unknown, coverage: try Self.coverage(setup))
            let doubled = try setup.connection.query(
                "SELECT count(*) FROM (SELECT transaction_id, kind FROM clawback.ledger GROUP BY 1, 2 HAVING count(*) > 1) d"
            ).first?.decode(Int.self, at: 0)
            #expect(doubled == 0)
        }
    }
}

@Suite("Google Play: whether the kept voids cover a run's window")
struct VoidCoverageTests {
    @Test(
        "never swept, kept only from after the window's start, a stale cursor (whatever the window): each said; a daily sweep's day-old cursor covers"
    )
    func coverage() throws {
        let now = Date()
        let window = try ReconciliationWindow(start: now - 90 * 86_400, end: now + 86_400)
        func uncovered(from: Double, until: Double) -> String? {
            GoogleOrdersGateway.uncovered(.init(from: now - from * 86_400, until: now - until * 86_400), window: window, now: now)
        }
        #expect(GoogleOrdersGateway.uncovered(nil, window: window, now: now)?.hasPrefix("never swept whole") == true)
        #expect(uncovered(from: 120, until: 1) == nil, "yesterday's sweep, kept since before the window")
        #expect(uncovered(from: 30, until: 1)?.contains("after the window's start") == true)
        #expect(uncovered(from: 120, until: 2)?.contains("the sweep is not running") == true)
        // A window that ended long ago still needs the voids recorded since: its refunds may come later.
        let past = try ReconciliationWindow(start: now - 200 * 86_400, end: now - 100 * 86_400)
        let stale = GoogleOrdersGateway.uncovered(.init(from: now - 300 * 86_400, until: now - 50 * 86_400), window: past, now: now)
        #expect(stale?.contains("the sweep is not running") == true)
    }
}

/// Asks the stop signal to stop after `after` answers, as a signal mid-run would.
final class StoppingGateway: StoreGateway {
    let inner: any StoreGateway
    let stop: StopSignal
    let after: Int?
    private let answered = Locked(0)

    init(inner: any StoreGateway, stop: StopSignal, after: Int?) {
        self.inner = inner
        self.stop = stop
        self.after = after
    }

    var statistics: AppStoreAPICounters { inner.statistics }
    func prepare(_ context: RunContext) async throws { try await inner.prepare(context) }
    func localAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer? { inner.localAnswer(for: grant, ledger: ledger) }
    func narrowing(_ selection: GrantSelection) -> GrantSelection { inner.narrowing(selection) }
    func contribute(to counters: inout RunCounters) { inner.contribute(to: &counters) }
    func finish() async throws { try await inner.finish() }

    func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer {
        let answer = await inner.answer(for: grant, ledger: ledger)
        let count = answered.withLock { count in
            count += 1
            return count
        }
        if let after, count >= after { stop.request() }
        return answer
    }
}
