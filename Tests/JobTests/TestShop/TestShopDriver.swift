import AppStoreDriver
import Foundation
import GooglePlayDriver
import HTTP
import Job
import Locking
import Logging
import Reconciliation
import Reports
import Storage

/// A third store that exists only in the tests: a web shop whose book of purchases and refunds is a value in
/// memory. Everything clawback knows of it is in this folder: its identity and words (`description`), its
/// driver and its gateways. It proves docs/architecture.md's "Adding a store": the monthly and daily runs,
/// the ledger, the summaries, the reports, the metrics and `runs` take it with no edit of the shared code.
enum TestShop {
    static let store = Store(identifier: "test_shop")
    /// Each purchase asked in the shop's book, one request each: the monthly run.
    static let orders = RunStrategy(identifier: "test-shop-orders", store: store)
    /// Only the purchases the shop's refund list names: the daily run.
    static let refunds = RunStrategy(identifier: "test-shop-refunds", store: store, isDaily: true)
    static let app = "shop.example.game"

    static let description = StoreDescription(
        store: store, company: "Example Shop Ltd", displayName: "Test Shop", strategies: [orders, refunds],
        report: .init(requestsKey: "test_shop", rateLimitedNote: "throttled answers"),
        importRules: .init(ownFields: [], originalIsTransactionID: true))

    /// The shop's own record of one purchase.
    struct Purchase: Sendable {
        var productID: String
        var quantity: Int32 = 1
        var priceMilli: Int64
        var currency: String
        /// The units the shop refunded of `quantity`, and when (nil: not refunded).
        var refundedQuantity: Int32 = 0
        var refundedAt: Date?
    }

    /// The shop: what it sold and refunded, and the requests it answered.
    final class Book: Sendable {
        let purchases = Locked<[String: Purchase]>([:])
        let requests = Locked(0)

        func refund(_ id: String, quantity: Int32? = nil, at date: Date) {
            purchases.withLock { book in
                guard var purchase = book[id] else { return }
                purchase.refundedQuantity = quantity ?? purchase.quantity
                purchase.refundedAt = date
                book[id] = purchase
            }
        }

        /// What the shop says of a purchase: its verified statement, or that it does not know it.
        func answer(_ grant: Grant) -> StoreAnswer {
            requests.withLock { $0 += 1 }
            guard let purchase = purchases.withLock({ $0[grant.transactionID] }) else {
                return .notFound(conclusive: false, detail: "the test shop has no purchase \(grant.transactionID)")
            }
            let refunded = purchase.refundedAt != nil && purchase.refundedQuantity > 0
            let partial = refunded && purchase.refundedQuantity < purchase.quantity
            return .verified(
                StoreStatement(
                    transactionID: grant.transactionID, environment: .production, bundleID: TestShop.app, productID: purchase.productID,
                    quantity: purchase.quantity, reportsAppAccountToken: false, revocationDate: purchase.refundedAt,
                    refundKind: refunded ? (partial ? .prorated : .full) : nil, priceMilli: purchase.priceMilli, currency: purchase.currency,
                    refundedShare: partial ? RefundedShare(Int64(purchase.refundedQuantity), of: Int64(purchase.quantity)) : nil,
                    revokedQuantity: partial ? purchase.refundedQuantity : nil, refundsOnlyGrow: true))
        }

        var refundedIDs: [String] { purchases.withLock { book in book.filter { $0.value.refundedAt != nil }.map(\.key).sorted() } }
    }
}

/// The test shop's driver: the shop's app, and a gateway over its book for each strategy.
struct TestShopDriver: StoreDriver {
    let book: TestShop.Book

    var storeDescription: StoreDescription { TestShop.description }

    /// Its own section of the configuration file: `test_shop: {apps: [...]}`.
    var configurationKeys: [String] { ["test_shop"] }

    struct Settings: StoreSettings {
        var apps: [String] = []
    }

    func readSettings(_ file: ConfigurationSection) -> (any StoreSettings)? {
        let section = file.section("test_shop")
        section.rejectUnknownKeys(["apps"])
        var settings = Settings()
        for (index, app) in section.list("apps").enumerated() {
            app.rejectUnknownKeys(["name"])
            guard let name = app.string("name"), !name.isEmpty else {
                section.problem("apps[\(index)].name", "names the shop's app")
                continue
            }
            settings.apps.append(name)
        }
        return settings
    }

    func apps(in configuration: ClawbackConfiguration) -> [String] { (configuration.settings(of: TestShop.store) as? Settings)?.apps ?? [] }

    func open(_ run: StoreRun, configuration: ClawbackConfiguration, logger: Logger) throws(StoreOpeningFailure) -> StoreConnection {
        guard !apps(in: configuration).isEmpty else {
            throw .configuration(.asked("--strategy \(run.strategy.rawValue) needs an app under test_shop.apps"))
        }
        return StoreConnection(gateway: TestShopGateway(book: book, daily: run.strategy.isDaily), defaultConcurrency: 4)
    }

    /// Its own part of finance's report: the purchases its book lists as refunded, as a shop that answers its
    /// buyers' complaints would list them beside the shared files.
    func reportTables(_ configuration: ClawbackConfiguration) -> [StoreReportTable] {
        guard !apps(in: configuration).isEmpty else { return [] }
        return [
            StoreReportTable(
                fileSuffix: "test-shop-refunds", title: "Refunds (Test Shop)", note: "the shop's own book", columns: ["order", "store"]
            ) { [book] _, window throws(ReportStore.Failure) in
                let refunded = book.refundedIDs
                return StoreReportTable.Contents(
                    rows: refunded.map { [.text($0), .text(TestShop.store.rawValue)] },
                    summaryRows: [
                        [
                            .text(window.label), .text("test_shop_refunds"), .text("refunded"), .empty, .empty, .integer(refunded.count), .empty,
                            .empty,
                            .text("the shop's book"), .empty, .text(TestShop.store.rawValue),
                        ]
                    ],
                    html: "<p id=\"test-shop-refunds\">\(refunded.count) refunded in the shop's book</p>\n")
            }
        ]
    }

    func metricsSeries(of strategy: RunStrategy) -> MetricsFile.Series {
        strategy.isDaily
            ? MetricsFile.Series(prefix: "clawback_test_shop_daily_", source: "test_shop_daily_run", api: "Test Shop API")
            : MetricsFile.Series(prefix: "clawback_test_shop_", source: "test_shop_run", api: "Test Shop API")
    }
}

/// Asks the shop's book about each grant; the daily run reads only the purchases the shop lists as refunded.
struct TestShopGateway: StoreGateway {
    let book: TestShop.Book
    let daily: Bool

    func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer { book.answer(grant) }

    var statistics: RequestCounts { RequestCounts(requests: book.requests.withLock { $0 }) }

    func narrowing(_ selection: GrantSelection) -> GrantSelection {
        guard daily else { return selection }
        var narrowed = selection
        narrowed.transactionIDs = book.refundedIDs
        return narrowed
    }
}
