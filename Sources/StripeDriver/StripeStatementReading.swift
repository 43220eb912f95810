import Foundation
import Reconciliation
import Stripe

/// A payment's reading in the core's terms: Stripe's final statement as a `StoreStatement` (the share taken
/// back, as a refund or a chargeback), a state not final as unverified, anything else for a person.
enum StripeStatementReading {
    static func answer(_ reading: PaymentReading, for grant: Grant) -> StoreAnswer {
        switch reading {
        case .notFinal(let why): return .unverified(reason: why)
        case .review(let reason, let detail): return .review(ReviewReason(rawValue: "stripe_" + reason), detail: detail)
        case .settled(let payment):
            let full = payment.taken == payment.amount
            let kind: RefundKind? = payment.taken == 0 ? nil : full ? (payment.chargeback ? .chargeback : .full) : .prorated
            return .verified(
                StoreStatement(
                    transactionID: payment.paymentIntent, environment: payment.livemode ? .production : .sandbox, reportsAppAccountToken: false,
                    revocationDate: payment.taken > 0 ? payment.lastChange : nil, refundKind: kind,
                    priceMilli: StripeCurrency.milli(minor: payment.amount, currency: payment.currency), currency: payment.currency.uppercased(),
                    refundedShare: kind == .prorated ? RefundedShare(payment.taken, of: payment.amount) : nil,
                    refundedAmountMilli: payment.taken > 0 ? StripeCurrency.milli(minor: payment.taken, currency: payment.currency) : nil,
                    // Stripe documents a refund that fails and a dispute won: what they took is given back.
                    refundsOnlyGrow: false))
        }
    }
}
