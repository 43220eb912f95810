import Foundation
import GooglePlay
public import HTTP
public import Reconciliation
import Storage
import Synchronization

/// `--strategy google-orders`, the monthly re-check of Google Play's grants: each grant's order asked in
/// Google's batches (`OrderBatcher`, `orders.batchget` with the bisection a whole-batch failure needs), read
/// fail closed with the voids the daily sweep kept (`GoogleOrderReading`). Its answers go through the same
/// rules, ledger keys and writes as Apple's: a rerun, a resumed run or another shard writes nothing twice.
public final class GoogleOrdersGateway: StoreGateway {
    let apps: GooglePlayApps
    private let batchers: [String: OrderBatcher]
    /// The kept voids of each purchase token of the configured apps voided in the window, read once before the
    /// first grant (about as many as the window's refunds).
    private let voids = Mutex<[String: [StoredVoid]]>([:])

    public init(apps: GooglePlayApps) {
        self.apps = apps
        batchers = apps.orders.mapValues { OrderBatcher(client: $0) }
    }

    /// Grants in flight for a run of this strategy: two full batches, one being asked while the next fills.
    public static let grantsInFlight = 2 * OrdersClient.maximumBatch

    public var statistics: RequestCounts { apps.statistics }

    /// The configured packages a selection reads (all, unless it names some).
    func packages(of selection: GrantSelection) -> [String] {
        apps.orders.keys.filter { selection.bundleIDs.isEmpty || selection.bundleIDs.contains($0) }.sorted()
    }

    public func prepare(_ context: RunContext) async throws {
        let packages = packages(of: context.selection)
        var byToken: [String: [StoredVoid]] = [:]
        // A void comes after its purchase: those before the window concern no grant of it.
        let since = context.selection.window.start
        for package in packages {
            for void in try await context.database.run({ try GoogleVoidStore.voids(packageName: package, since: since, on: $0) }) {
                byToken[void.purchaseToken, default: []].append(void)
            }
        }
        voids.withLock { [byToken] in $0 = byToken }
    }

    /// Where a grant's answer comes from: Google's batch of its package, or no request at all.
    private enum Route {
        case ask(OrderBatcher, orderID: String)
        case answered(StoreAnswer)
    }

    private func route(_ grant: Grant) -> Route {
        guard let batcher = batchers[grant.bundleID] else {
            return .answered(.unverified(reason: "no service account configured for Google Play package \(grant.bundleID)"))
        }
        guard let orderID = grant.orderID else { return .answered(.review(.withoutOrderID, detail: GoogleOrderReading.missingOrderID)) }
        return .ask(batcher, orderID: orderID)
    }

    public func localAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer? {
        if case .answered(let answer) = route(grant) { return answer }
        return nil
    }

    public func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer {
        switch route(grant) {
        case .answered(let answer): return answer
        case .ask(let batcher, let orderID):
            let order = await batcher.answer(orderID)
            let kept = voids.withLock { $0[grant.transactionID] ?? [] }
            return GoogleOrderReading.answer(for: grant, order: order, voids: kept, ledger: ledger)
        }
    }
}
