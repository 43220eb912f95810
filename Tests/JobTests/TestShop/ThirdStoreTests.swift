import AppStoreDriver
import Foundation
import GooglePlayDriver
import Job
import Logging
import Postgres
import Reconciliation
import Reports
import Storage
import TestSupport
import Testing

/// A store defined in this folder alone (`TestShop`) goes through the real monthly and daily runs, the
/// ledger, the run summary, the reports, the metrics file and `runs`: what docs/architecture.md's "Adding a
/// store" promises, held. The shared code names no store (`SharedCodeNamesNoStoreTests`).
@Suite("A third store through the shared runs", .serialized)
struct ThirdStoreTests {
    static let unitsPerItem: Int64 = 100
    static let now = Date()

    /// 40 purchases of 12 players, some of several accounts; optional fields in some rows only; hostile text
    /// in product and player ids; a tenth refunded (two of them in part), one the shop never sold.
    static func shop() -> (book: TestShop.Book, grants: [[String: Any]]) {
        let book = TestShop.Book()
        var grants: [[String: Any]] = []
        for index in 0..<40 {
            let id = "shop-order-\(index)"
            let quantity: Int32 = index % 7 == 0 ? 3 : 1
            let product = index % 5 == 0 ? "gems_=HYPERLINK(\"x\")" : "gems_100"
            let purchased = now - Double(10 + index) * 86_400
            if index != 39 {
                book.purchases.withLock {
                    $0[id] = TestShop.Purchase(productID: product, quantity: quantity, priceMilli: 4_990, currency: index % 2 == 0 ? "EUR" : "USD")
                }
            }
            var grant: [String: Any] = [
                "store": "test_shop", "transaction_id": id, "bundle_id": TestShop.app, "product_id": product,
                "player_id": index % 3 == 0 ? "player-\(index % 12)" : "player-\(index % 12)'; DROP TABLE x;--", "quantity": quantity,
                "units_granted": unitsPerItem * Int64(quantity), "purchased_at": ISO8601DateFormatter().string(from: purchased),
            ]
            if index % 2 == 0 {
                grant["price_milli"] = 4_990
                grant["currency"] = "EUR"
                grant["order_id"] = "WEB-\(index)"
            }
            grants.append(grant)
        }
        for index in [1, 8, 14, 22] { book.refund("shop-order-\(index)", at: now - 3 * 86_400) }
        book.refund("shop-order-7", quantity: 1, at: now - 2 * 86_400)
        return (book, grants)
    }

    static func request(
        _ strategy: RunStrategy, window: ReconciliationWindow, directory: URL, database: PostgresConfiguration, metrics: String
    ) -> MonthlyRun.Request {
        MonthlyRun.Request(
            selection: GrantSelection(window: window), strategy: strategy, dryRun: false, resumeRunID: nil, concurrency: nil, batchSize: 7,
            auditShare: 0, metricsFile: metrics, reports: ReportOptions(directory: directory.path),
            origin: RunOrigin(triggeredBy: "test", host: "localhost", arguments: []), database: database.storage)
    }

    static func csv(_ path: String) throws -> [[String: String]] {
        try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: path)))).rows
    }

    /// The shop's section of the configuration file, read by its driver.
    static func configuration() throws -> ClawbackConfiguration {
        try ClawbackConfiguration.parseWithStores(yaml: "test_shop:\n  apps:\n    - name: \(TestShop.app)\n")
    }

    @Test("its own section of the configuration file, read by its driver by the file's rules")
    func configurationSection() throws {
        StoreDrivers.register(TestShopDriver(book: TestShop.Book()))
        #expect(TestShopDriver(book: TestShop.Book()).apps(in: try Self.configuration()) == [TestShop.app])
        #expect(TestShopDriver(book: TestShop.Book()).apps(in: ClawbackConfiguration()).isEmpty)
        do {
            _ = try ClawbackConfiguration.parseWithStores(yaml: "test_shop:\n  apps:\n    - nme: x\n  colour: red\n")
            Issue.record("a section with unknown keys and an app without a name was read")
        } catch {
            let fields = Set(error.errors.map(\.field))
            #expect(fields == ["test_shop.colour", "test_shop.apps[0].nme", "test_shop.apps[0].name"], "\(error.errors)")
        }
    }

    @Test("monthly and daily runs, the ledger, the summary, the reports, the metrics and runs take a store defined in a test")
    func thirdStore() async throws {
        let (book, grants) = Self.shop()
        StoreDrivers.register(TestShopDriver(book: book))
        try await TestPostgres.withScratchDatabaseAsync { name in
            let connection = try TestPostgres.connect(database: name)
            try Migrator().migrate(on: connection.storage)
            // The store's own migration: its value of clawback.store.
            try connection.execute("ALTER TYPE clawback.store ADD VALUE IF NOT EXISTS 'test_shop'")
            var lines = Data()
            for grant in grants { lines += try JSONSerialization.data(withJSONObject: grant) + Data("\n".utf8) }
            let imported = try GrantImport.importJSONLines(lines, skipInvalid: false, on: connection.storage)
            #expect(imported.invalid.isEmpty && imported.inserted == 40)

            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-shop-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            let metrics = directory.appendingPathComponent("shop.prom").path
            let window = try ReconciliationWindow(start: Self.now - 80 * 86_400, end: Self.now + 3_600)
            let database = try TestPostgres.configuration(database: name)
            let logger = Logger(label: "test")
            let configuration = try Self.configuration()
            let monthly = Self.request(TestShop.orders, window: window, directory: directory, database: database, metrics: metrics)

            // The monthly run: every grant asked, each refund taken back once, the unknown purchase a review.
            let first = try await MonthlyRun.perform(
                monthly, configuration: configuration, logger: logger, progress: nil, stop: StopSignal())
            #expect(first.run.status == .succeeded)
            #expect(first.run.counters.verdicts[.refunded] == 5)
            #expect(first.run.counters.verdicts[.unknownToStore] == 1)
            #expect(first.run.counters.verdicts[.ok] == 34)
            #expect(first.run.counters.storeRequests == 40)
            let entries = try connection.query(
                "SELECT kind, units, store::text FROM clawback.ledger ORDER BY transaction_id"
            ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(Int64.self, at: 1), try $0.decode(String.self, at: 2)) }
            #expect(entries.allSatisfy { $0.2 == "test_shop" })
            #expect(entries.filter { $0.0 == "clawback" }.map(\.1).reduce(0, +) == 3 * Self.unitsPerItem + 3 * Self.unitsPerItem + Self.unitsPerItem)
            #expect(entries.filter { $0.0 == "review" }.count == 1)

            // Its words: the summary names the shop, never another store.
            let summary = RunSummary.render(first, dryRun: false, json: false, oneLine: false)
            #expect(summary.contains("Example Shop Ltd requests"))
            #expect(summary.contains("unknown_to_store"))
            #expect(!summary.contains("Apple") && !summary.contains("Google") && !summary.contains("unknown_to_apple"))

            // The reports: every flagged row the shop's, its own order ids, no App Store column filled.
            let files = try #require(first.reports)
            let detail = try Self.csv(files.detail)
            #expect(detail.count == 6)
            #expect(detail.allSatisfy { $0["store"] == "test_shop" && $0["apple_currency"] == "" && $0["apple_price_informational"] == "" })
            #expect(detail.contains { $0["order_id"] == "WEB-14" && $0["store_currency"] == "EUR" })
            let figures = try Self.csv(files.summary)
            #expect(figures.first { $0["key"] == "test_shop_requests" }?["count"] == "40")
            #expect(figures.first { $0["key"] == "test_shop_requests" }?["store"] == "test_shop")
            #expect(!figures.contains { $0["key"] == "apple_requests" || $0["key"] == "google_play_requests" })
            #expect(!figures.contains { $0["section"] == "verdict" && ($0["key"] == "unknown_to_apple" || $0["key"] == "unknown_to_google") })
            #expect(figures.first { $0["section"] == "verdict" && $0["key"] == "unknown_to_store" }?["count"] == "1")
            // Its own part of the report, written by the shared report without naming it: a CSV, summary rows, HTML.
            let part = try #require(files.storeTables.first { $0.hasSuffix("-test-shop-refunds.csv") }, "\(files.storeTables)")
            #expect(try Self.csv(part).count == book.refundedIDs.count && !book.refundedIDs.isEmpty)
            #expect(figures.first { $0["section"] == "test_shop_refunds" }?["count"] == String(book.refundedIDs.count))
            let page = try String(contentsOfFile: try #require(files.html), encoding: .utf8)
            #expect(page.contains("Refunds (Test Shop)") && page.contains("id=\"test-shop-refunds\""))
            #expect(!files.storeTables.contains { $0.contains("stripe") }, "Stripe's part only where Stripe is configured")

            // The metrics file: the shop's own series.
            let text = try String(contentsOfFile: metrics, encoding: .utf8)
            #expect(text.contains("clawback_test_shop_requests{window=\"\(window.label)\"} 40"))
            #expect(text.contains("# HELP clawback_test_shop_requests Test Shop API requests"))
            #expect(!text.contains("apple_requests"))

            // Exactly once: the same run again writes nothing new; the game claims each of the five clawbacks (the
            // review is staff's).
            let again = try await MonthlyRun.perform(
                monthly, configuration: configuration, logger: logger, progress: nil, stop: StopSignal())
            #expect(again.run.status == .succeeded && again.run.counters.newLedgerEntries == 0)
            let claimed = try connection.query("SELECT count(*) FROM clawback.claim_clawbacks('game-1', 100)").rows.first?.decode(Int.self, at: 0)
            #expect(claimed == 5)

            // The daily run: a late refund; only the six purchases the shop lists as refunded are asked.
            book.refund("shop-order-30", at: Self.now - 3_600)
            let before = book.requests.withLock { $0 }
            let daily = await DailyRun.perform(
                Self.request(TestShop.refunds, window: window, directory: directory, database: database, metrics: metrics),
                windows: [window], configuration: configuration, logger: logger, progress: nil, stop: StopSignal())
            #expect(daily.failure == nil)
            #expect(daily.passes.first?.run.counters.checked == 6)
            #expect(book.requests.withLock { $0 } - before == 6)
            let late = try connection.query(
                "SELECT units FROM clawback.ledger WHERE transaction_id = 'shop-order-30' AND kind = 'clawback'"
            ).rows.map { try $0.decode(Int64.self, at: 0) }
            #expect(late == [Self.unitsPerItem])
            #expect(try String(contentsOfFile: metrics, encoding: .utf8).contains("clawback_test_shop_daily_requests"))

            // `runs` lists the shop's strategies.
            let context = CommandContext(
                configuration: configuration, database: DatabaseTarget(connectionString: try TestPostgres.connectionString(database: name)),
                logger: logger)
            let listing = try RunsListing.recent(limit: 10, context)
            #expect(listing.contains("test-shop-orders") && listing.contains("test-shop-refunds"))
        }
    }
}
