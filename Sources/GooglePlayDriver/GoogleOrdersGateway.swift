import Foundation
import GooglePlay
public import HTTP
public import Job
import Locking
public import Reconciliation
import Reports
public import Storage

/// `--strategy google-orders`, the monthly re-check of Google Play's grants: each grant's order asked in
/// Google's batches (`OrderBatcher`, `orders.batchget` with the bisection a whole-batch failure needs), read
/// fail closed with the voids the daily sweep kept (`GoogleOrderReading`). Its answers go through the same
/// rules, ledger keys and writes as Apple's: a rerun, a resumed run or another shard writes nothing twice.
public final class GoogleOrdersGateway: StoreGateway {
    let apps: GooglePlayApps
    private let batchers: [String: OrderBatcher]
    /// The kept voids of each purchase token of the configured apps voided in the window, read once before the
    /// first grant (about as many as the window's refunds).
    private let voids = Locked<[String: [StoredVoid]]>([:])
    /// The apps whose kept voids do not cover the window, with why (`RunCounters.voidsNotCovered`).
    private let notCovered = Locked<[String]>([])
    /// How old the sweep's cursor may be before a run says the voids are stale: a day's schedule and its retries.
    static let staleAfter: TimeInterval = 36 * 3_600
    /// In how many monthly runs in a row (this one included) an answered order's reading may stay undecided
    /// for one reason before it goes to a person (`ReviewReason.orderUndecided`).
    public static let undecidedRuns = 3
    /// Purchase token → the reason the monthly runs of the windows before this one all left it unverified for.
    private let undecidedBefore = Locked<[String: String]>([:])
    /// What each app's kept voids cover (absent: never swept whole).
    private let coverages = Locked<[String: GoogleVoidStore.Coverage]>([:])

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
        var uncovered: [String] = []
        var covered: [String: GoogleVoidStore.Coverage] = [:]
        for package in packages {
            let coverage = try await context.database.run { try GoogleVoidStore.coverage(packageName: package, on: $0) }
            covered[package] = coverage
            if let reason = Self.uncovered(coverage, window: context.selection.window, now: Date()) { uncovered.append("\(package): \(reason)") }
        }
        notCovered.withLock { [uncovered] in $0 = uncovered }
        coverages.withLock { [covered] in $0 = covered }
        let window = context.selection.window
        let persistent = try await context.database.run {
            try RunStore.persistentlyUnverified(strategy: .googleOrders, windows: Self.undecidedRuns - 1, before: window.start, on: $0)
        }
        undecidedBefore.withLock { $0 = persistent }
    }

    /// Why the kept voids do not cover `window` as of `now`, or nil when they do: voids of the window's purchases
    /// are recorded from its start on, until now (a refund may come after the window), and a daily sweep keeps
    /// them up to about a day ago.
    static func uncovered(_ coverage: GoogleVoidStore.Coverage?, window: ReconciliationWindow, now: Date) -> String? {
        guard let coverage else { return "never swept whole (clawback google-play sweep-voids)" }
        if coverage.from > window.start {
            return "voids kept only from \(ReportTimestamp.format(coverage.from)), after the window's start"
        }
        if coverage.until < now - staleAfter {
            return "last swept whole up to \(ReportTimestamp.format(coverage.until)): the sweep is not running"
        }
        return nil
    }

    public func contribute(to counters: inout RunCounters) {
        counters.voidsNotCovered = notCovered.withLock { $0 }
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
            let coverage = coverages.withLock { $0[grant.bundleID] }
            let answer = GoogleOrderReading.answer(for: grant, order: order, voids: kept, ledger: ledger, coverage: coverage)
            // Google stated the order (or refused this id alone), and the last monthly runs found the same: a
            // person's. A transport failure or an unanswered batch says nothing about the order and never counts.
            if order.isStatementOfTheID, case .unverified(let reason) = answer,
                undecidedBefore.withLock({ $0[grant.transactionID] }) == reason
            {
                return .review(
                    .orderUndecided,
                    detail: reason + "; the same in \(Self.undecidedRuns) monthly runs in a row: a person decides, nothing moves")
            }
            return answer
        }
    }
}

extension OrderAnswer {
    /// Google answered about this id itself: its order, or a refusal of the id alone.
    var isStatementOfTheID: Bool {
        switch self {
        case .order, .refused: true
        case .notFound, .unanswered: false
        }
    }
}
