import Foundation
public import HTTP
public import Job
public import Logging
public import Reconciliation
public import Storage

/// Google Play's daily run (`clawback run --daily --strategy google-orders`, stored as `google-voided-orders`):
/// the purchases whose voids the sweep kept since the last daily run of the same window, apps and shard that
/// succeeded (less a day, for a sweep that kept a void while that run was reading; the window's start the
/// first time), each order asked and read exactly as the monthly run asks and reads it (`GoogleOrdersGateway`).
/// So a Google refund that Google lists as a void reaches the ledger the day after the sweep keeps it, under
/// the same ledger keys: the monthly run then writes nothing new for it.
///
/// It concludes nothing about any other grant. What the voids cannot show (a refund by amount without revoke,
/// which Google does not list as a void) is left to the monthly run, which asks every order.
public final class GoogleVoidedOrdersGateway: StoreGateway {
    let orders: GoogleOrdersGateway
    let logger: Logger
    private let named = NamedPurchases()

    /// How far before the last successful daily run's start its voids are read again.
    static let margin: TimeInterval = 86_400

    public init(apps: GooglePlayApps, logger: Logger) {
        orders = GoogleOrdersGateway(apps: apps)
        self.logger = logger
    }

    public var statistics: RequestCounts { orders.statistics }

    public func prepare(_ context: RunContext) async throws {
        try await orders.prepare(context)
        let selection = context.selection
        let last = try await context.database.run { try RunStore.lastSucceededStart(of: .googleVoidedOrders, like: selection, on: $0) }
        let from = max(selection.window.start, (last ?? selection.window.start) - Self.margin)
        let packages = orders.packages(of: selection)
        var tokens: Set<String> = []
        for package in packages {
            tokens.formUnion(try await context.database.run { try GoogleVoidStore.tokensKept(packageName: package, since: from, on: $0) })
        }
        named.set(tokens)
        logger.info(
            "kept voids read for the daily run",
            metadata: ["voids.kept_since": "\(from)", "voids.apps": "\(packages.count)", "voids.purchases": "\(tokens.count)"])
    }

    public func narrowing(_ selection: GrantSelection) -> GrantSelection { named.narrowing(selection) }

    public func localAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer? { orders.localAnswer(for: grant, ledger: ledger) }

    public func contribute(to counters: inout RunCounters) { orders.contribute(to: &counters) }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer { await orders.answer(for: grant, ledger: ledger) }
}
