public import Foundation
public import Reconciliation

/// Grants a run decided `no_refund_reported` on one statement, stored as one row of `clawback.check_pages`
/// instead of a check each (migration 0011): such a check carries nothing but the statement.
public struct CheckPage: Sendable, Equatable {
    public var detail: String
    public var transactionIDs: [String] = []
    public var purchasedAts: [Date] = []
    /// The earliest and latest purchase among the grants: a resumed run finds the pages that may hold a
    /// grant by its purchase time (timestamps compare alike in Swift and PostgreSQL; transaction ids
    /// compare by the database's collation, which the job does not know).
    public var firstPurchasedAt: Date
    public var lastPurchasedAt: Date

    init(detail: String, grant: Grant) {
        self.detail = detail
        firstPurchasedAt = grant.purchasedAt
        lastPurchasedAt = grant.purchasedAt
    }

    mutating func append(_ grant: Grant) {
        transactionIDs.append(grant.transactionID)
        purchasedAts.append(grant.purchasedAt)
        firstPurchasedAt = min(firstPurchasedAt, grant.purchasedAt)
        lastPurchasedAt = max(lastPurchasedAt, grant.purchasedAt)
    }
}

/// The pages a batch is filling: one per statement (the notifications strategy's statement names the
/// feed's first day, so a run over several apps and environments fills a few at once).
public struct CheckPages: Sendable {
    private var byDetail: [String: CheckPage] = [:]
    /// Grants held, over every page.
    public private(set) var grants = 0

    public init() {}

    public var isEmpty: Bool { grants == 0 }
    public var pages: [CheckPage] { byDetail.keys.sorted().compactMap { byDetail[$0] } }

    /// Takes `record` into a page when it is one a page can hold (a `no_refund_reported` check with no
    /// ledger entry and no Apple facts, which a page records exactly); false leaves it to a check row.
    public mutating func take(_ record: CheckRecord) -> Bool {
        guard Self.holds(record), let detail = record.decision.detail else { return false }
        byDetail[detail, default: CheckPage(detail: detail, grant: record.grant)].append(record.grant)
        grants += 1
        return true
    }

    public mutating func removeAll() {
        byDetail.removeAll(keepingCapacity: true)
        grants = 0
    }

    static func holds(_ record: CheckRecord) -> Bool {
        record.decision.verdict == .noRefundReported && record.decision.action == .none && record.decision.entry == nil
            && record.decision.units == 0 && record.facts == nil
    }
}
