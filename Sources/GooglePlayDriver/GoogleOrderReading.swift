import Foundation
import GooglePlay
import Job
import Reconciliation
import Storage

/// Google's statement about one grant's purchase, as the answer the reconciliation rules decide on (the
/// same rules, ledger keys and exactly-once writes as Apple's). The order (Orders API) is the statement; the
/// voids the sweep kept only add what the order does not say: a chargeback's or fraud's reason, and the
/// units of a quantity-based partial refund. Where Google's answer cannot decide yet, the grant stays
/// unverified (asked again next run); where it can never decide alone (no order id, the voids disagreeing
/// with the order, a refund no longer shown) a person reviews it, and no units move.
enum GoogleOrderReading {
    /// How long after a refund the sweep must have read on before its missing void says the refund did not
    /// revoke the purchase: Google does not document how soon a void is listed, so three days of sweeps.
    static let voidListingDelay: TimeInterval = 3 * 86_400

    /// `voids` are the kept voids of the grant's purchase token; `coverage` what the sweep's kept voids of its
    /// app cover (nil: never swept whole).
    static func answer(
        for grant: Grant, order answer: OrderAnswer, voids: [StoredVoid], ledger: LedgerHistory, coverage: GoogleVoidStore.Coverage? = nil
    ) -> StoreAnswer {
        guard let orderID = grant.orderID else { return .review(.withoutOrderID, detail: missingOrderID) }
        let order: Order
        switch answer {
        case .unanswered(let reason), .refused(let reason): return .unverified(reason: reason)
        case .notFound:
            // Not conclusive: Google does not document that a 404 proves the order never existed.
            return .notFound(
                conclusive: false,
                detail: "Google's Orders API answered 404 notFound for order \(orderID) of \(grant.bundleID): a person decides "
                    + "(Google does not document that this proves the order never existed)")
        case .order(let answered): order = answered
        }
        if let other = voids.first(where: { $0.orderID != nil && $0.orderID != orderID }) {
            return .review(
                .voidsDisagree, detail: "a kept void of this purchase token names order \(other.orderID ?? ""), not the grant's \(orderID)")
        }
        let purchase = OrderStatement.Purchase(
            orderID: orderID, purchaseToken: grant.transactionID, productID: grant.productID, quantity: Int(grant.quantity))
        var facts = StoreStatement(
            transactionID: grant.transactionID, environment: grant.environment, bundleID: grant.bundleID, productID: grant.productID,
            quantity: grant.quantity, reportsAppAccountToken: false, priceMilli: order.total?.milli, currency: order.total?.currencyCode,
            refundsOnlyGrow: true)
        switch OrderStatement.read(order, about: purchase) {
        case .undecided(let reason):
            return .unverified(reason: reason)
        case .disagrees(_, let detail):
            return .review(.orderDisagrees, detail: detail)
        case .canceled:
            return .review(
                .canceledAtGoogle,
                detail: "Google shows order \(orderID) CANCELED (canceled before it was processed, never charged): a person decides")
        case .notRefunded:
            if ledger.outstandingUnits != 0 {
                return .review(
                    .refundNoLongerShown,
                    detail: "order \(orderID) is PROCESSED again while \(ledger.outstandingUnits) units are taken back: Google documents no "
                        + "reversal of a refund, so a person decides whether to give them back")
            }
            if let void = voids.first {
                // Google warns the feed may show a processor's chargeback before the order does: a person looks
                // now, and the run that finds the order refunded claws it back.
                return .review(
                    .voidsDisagree,
                    detail: "Google's voided purchases list this purchase voided at \(void.voidedAt) while order \(orderID) is PROCESSED")
            }
            return .verified(facts)
        case .refunded(let at, let chargeback, let amountMilli, let currency):
            facts.revocationDate = at
            facts.refundKind = fullRefundKind(chargeback: chargeback, voids: voids)
            // Google lists a refund as a void only when it revoked the purchase: with the sweep reading well past
            // the refund and no void kept, the refund was made without revoke.
            if !voids.isEmpty {
                facts.refundRevokedAccess = true
            } else if let coverage, coverage.from <= at, coverage.until >= at + voidListingDelay {
                facts.refundRevokedAccess = false
            }
            if currency == facts.currency { facts.refundedAmountMilli = amountMilli }
            return .verified(facts)
        case .partiallyRefunded(let at, let amountMilli, _):
            facts.revocationDate = at
            facts.refundKind = .prorated
            facts.refundedAmountMilli = amountMilli
            // OrderStatement read a positive total in the order's currency, above what was refunded.
            guard let total = order.total?.milli, total > 0 else { return .unverified(reason: "order \(orderID) has no well-formed total") }
            let share = RefundedShare(amountMilli, of: total)
            if voids.contains(where: { $0.quantity == nil }) {
                return .review(
                    .voidsDisagree, detail: "Google's voided purchases list this purchase voided whole while order \(orderID) is PARTIALLY_REFUNDED")
            }
            let voided = voids.reduce(Int64(0)) { $0 + Int64($1.quantity ?? 0) }
            if voided > 0 {
                // A quantity-based partial refund: exactly the voided units of the quantity, when the order's
                // amount says as many items (to the nearest); a void missed or kept twice would not.
                let quantity = Int64(grant.quantity)
                let amountInItems = ProratedUnits.compute(units: quantity, share: share, rule: .nearestHalfUp)
                guard voided < quantity, amountInItems == voided else {
                    return .review(
                        .voidsDisagree,
                        detail: "Google's voided purchases void \(voided) of order \(orderID)'s \(quantity) items, its refunds "
                            + "\(amountMilli) of \(total) thousandths (\(amountInItems) items)")
                }
                facts.refundedShare = RefundedShare(voided, of: quantity)
                facts.revokedQuantity = Int32(voided)
            } else {
                // An amount-based one: the amount's share of the order's total (what it means for units is the
                // studio's choice: google.amount_refunds).
                facts.refundedShare = share
                facts.refundedByAmount = true
            }
            facts.revocationPercentage = facts.refundedShare?.percentageMilli
            return .verified(facts)
        }
    }

    static let missingOrderID =
        "a Google Play grant without an order id cannot be asked about in Google's Orders API (a promotion code's purchase has "
        + "none): a person decides"

    /// A full refund, or one of the reasons finance keeps apart: a chargeback (the order's refund reason, or
    /// a void's `voidedReason` 7) or fraud (a void's 5 Fraud or 6 Friendly_fraud).
    static func fullRefundKind(chargeback: Bool, voids: [StoredVoid]) -> RefundKind {
        if chargeback || voids.contains(where: { $0.reason == 7 }) { return .chargeback }
        if voids.contains(where: { $0.reason == 5 || $0.reason == 6 }) { return .fraud }
        return .full
    }
}
