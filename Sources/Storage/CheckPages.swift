public import Foundation
import Reconciliation

/// Grants a run decided `no_refund_reported` on one statement, stored as one row of `clawback.check_pages`
/// instead of a check each (migration 0011): such a check carries nothing but the statement.
public struct CheckPage: Sendable, Equatable {
    public var bundleID: String
    public var environment: String
    public var detail: String
    public var transactionIDs: [String] = []
    public var purchasedAts: [Date] = []
    public var playerIDs: [String] = []
    public var productIDs: [String] = []
    public var unitsGranted: [Int64] = []
    /// The earliest and latest purchase among the grants: a resumed run finds the pages that may hold a
    /// grant by its purchase time (timestamps compare alike in Swift and PostgreSQL; transaction ids
    /// compare by the database's collation, which the job does not know).
    public var firstPurchasedAt: Date
    public var lastPurchasedAt: Date

    init(detail: String, grant: Grant) {
        bundleID = grant.bundleID
        environment = grant.environment.rawValue
        self.detail = detail
        firstPurchasedAt = grant.purchasedAt
        lastPurchasedAt = grant.purchasedAt
    }

    mutating func append(_ grant: Grant) {
        transactionIDs.append(grant.transactionID)
        purchasedAts.append(grant.purchasedAt)
        playerIDs.append(grant.playerID)
        productIDs.append(grant.productID)
        unitsGranted.append(grant.unitsGranted)
        firstPurchasedAt = min(firstPurchasedAt, grant.purchasedAt)
        lastPurchasedAt = max(lastPurchasedAt, grant.purchasedAt)
    }
}

/// The pages a batch is filling: one per app, environment and statement (a run over several apps and
/// environments fills a few at once).
public struct CheckPages: Sendable {
    private var byKey: [String: CheckPage] = [:]
    /// Grants held, over every page.
    public private(set) var grants = 0

    public init() {}

    public var isEmpty: Bool { grants == 0 }
    public var pages: [CheckPage] { byKey.keys.sorted().compactMap { byKey[$0] } }

    /// Takes `record` into a page when it is one a page can hold (a `no_refund_reported` check with no
    /// ledger entry and no Apple facts, which a page records exactly); false leaves it to a check row.
    public mutating func take(_ record: CheckRecord) -> Bool {
        guard Self.holds(record), let detail = record.decision.detail else { return false }
        let grant = record.grant
        byKey[grant.bundleID + "\u{0}" + grant.environment.rawValue + "\u{0}" + detail, default: CheckPage(detail: detail, grant: grant)]
            .append(grant)
        grants += 1
        return true
    }

    public mutating func removeAll() {
        byKey.removeAll(keepingCapacity: true)
        grants = 0
    }

    static func holds(_ record: CheckRecord) -> Bool {
        record.decision.verdict == .noRefundReported && record.decision.action == .none && record.decision.entry == nil
            && record.decision.units == 0 && record.facts == nil
    }
}
