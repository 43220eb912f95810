import Foundation
import Reconciliation
public import Storage

// What a report computes from a flagged purchase (Storage's row): whether it is a refund or needs a person,
// and its amounts at the store's price.

extension FlaggedPurchase {
    /// Refunded or revoked by the store (the verdicts that take units back).
    public var isRefund: Bool { verdict == .refunded || verdict == .revoked }

    /// Needs a person: the store does not know it, disagrees with the grant, or could not be asked.
    public var needsReview: Bool { verdict.isUnknownToItsStore || [.mismatch, .unverified].contains(verdict) }

    /// The store's price of what was refunded, in milliunits (informational): what the store states, the whole
    /// price, or the prorated share. Nil when the store gave no price or this is not a refund.
    public var refundedAmountMilli: Int64? {
        // A refund the rules sent to a person moved no units: its amount is not a refund's yet.
        guard isRefund, action != .flaggedForReview else { return nil }
        // Google states what it refunded; Apple's share is computed from its price.
        if let stated = storeRefundedAmountMilli { return stated }
        guard let price = storePriceMilli else { return nil }
        guard revocationType == "REFUND_PRORATED", let percentage = revocationPercentage else { return price }
        return Money.share(ofMilli: price, percentageMilli: percentage)
    }
}

extension FlaggedPurchase {
    /// The value of the ledger position's units at the purchase's price, rounded to the currency as a report
    /// row shows it (informational). Nil without a position or a price from the store.
    public var entryAmountMilli: Int64? { value(ofUnits: position?.units) }

    /// The value of the units the game actually applied (nil until acknowledged).
    public var recoveredAmountMilli: Int64? { value(ofUnits: position?.unitsApplied) }

    private func value(ofUnits units: Int64?) -> Int64? {
        guard let units, let price = storePriceMilli,
            let value = Money.value(ofUnits: units, granted: unitsGranted, priceMilli: price)
        else { return nil }
        return Money.rounded(milli: value, currency: storeCurrency)
    }
}
