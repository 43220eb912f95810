public import Foundation

/// What Stripe states about one payment (a PaymentIntent's charges, refunds and disputes), read fail closed:
/// only final states move money, every state Stripe documents is read by the table of docs/stripe.md, and
/// a state it does not document goes to a person.
public enum PaymentReading: Sendable, Equatable {
    /// Stripe's final statement of the payment.
    case settled(PaymentStatement)
    /// Something about the payment is not final yet (a refund `pending` or `requires_action`, a payment
    /// `processing`): no verdict until it is.
    case notFinal(String)
    /// Stripe states something clawback does not decide on its own (a status it does not document, a
    /// payment that never succeeded, two successful charges, a dispute in another currency): for a person.
    case review(reason: String, detail: String)

    /// Refund statuses (Stripe's spec: a plain string) and what each means for the money.
    static let refundTaken: Set<String> = ["succeeded"]
    static let refundNotFinal: Set<String> = ["pending", "requires_action"]
    static let refundNotTaken: Set<String> = ["failed", "canceled"]
    /// Dispute statuses: an inquiry (`warning_…`) moves no money; a chargeback withdraws the amount until
    /// it is won; `prevented` and any status this version does not know go to a person.
    static let disputeInquiry: Set<String> = ["warning_needs_response", "warning_under_review", "warning_closed"]
    static let disputeWithdrawn: Set<String> = ["needs_response", "under_review", "lost"]
    static let disputeReinstated: Set<String> = ["won"]

    /// Reads the charges of one PaymentIntent (`paymentIntent`: its own id; its status when it was read,
    /// nil when only its charges were listed), with the refunds and disputes of those charges.
    public static func read(
        paymentIntent id: String, intentStatus: String?, charges: [Charge], refunds: [Refund], disputes: [Dispute]
    ) -> PaymentReading {
        if let intentStatus, intentStatus != "succeeded" {
            if intentStatus == "processing" { return .notFinal("Stripe is still processing payment \(id)") }
            return .review(reason: "payment_not_succeeded", detail: "Stripe shows payment \(id) \(intentStatus), not succeeded")
        }
        let collected = charges.filter { $0.status == "succeeded" && $0.paid && $0.paymentIntent == id }
        if charges.contains(where: { $0.status == "pending" && $0.paymentIntent == id }) && collected.isEmpty {
            return .notFinal("the charge of payment \(id) is pending at Stripe")
        }
        guard let charge = collected.first else {
            return .review(reason: "payment_not_succeeded", detail: "Stripe shows no successful charge of payment \(id)")
        }
        guard collected.count == 1 else {
            return .review(
                reason: "several_charges",
                detail: "Stripe shows \(collected.count) successful charges of payment \(id): \(collected.map(\.id).joined(separator: ", "))")
        }
        let amount = charge.captured ? charge.amountCaptured : 0
        guard amount > 0 else { return .review(reason: "payment_not_succeeded", detail: "charge \(charge.id) of payment \(id) captured nothing") }
        var taken: Int64 = 0
        var chargeback = false
        var lastChange: Date?
        func changed(_ date: Date) { lastChange = max(lastChange ?? date, date) }
        for refund in refunds where refund.charge == charge.id {
            let status = refund.status ?? ""
            if refundTaken.contains(status) {
                guard refund.currency.lowercased() == charge.currency.lowercased() else {
                    return .review(
                        reason: "refund_currency", detail: "refund \(refund.id) is in \(refund.currency), charge \(charge.id) in \(charge.currency)")
                }
                taken += refund.amount
                changed(refund.created)
            } else if refundNotFinal.contains(status) {
                return .notFinal("refund \(refund.id) of charge \(charge.id) is \(status) at Stripe: not final")
            } else if !refundNotTaken.contains(status) {
                return .review(
                    reason: "refund_status",
                    detail: "refund \(refund.id) has the status \(status.isEmpty ? "(none)" : status), which Stripe does not document")
            }
        }
        for dispute in disputes where dispute.charge == charge.id {
            if disputeWithdrawn.contains(dispute.status) {
                guard dispute.currency.lowercased() == charge.currency.lowercased() else {
                    return .review(
                        reason: "dispute_currency",
                        detail: "dispute \(dispute.id) is in \(dispute.currency), charge \(charge.id) in \(charge.currency)")
                }
                taken += dispute.amount
                chargeback = true
                changed(dispute.created)
            } else if !disputeInquiry.contains(dispute.status) && !disputeReinstated.contains(dispute.status) {
                return .review(
                    reason: "dispute_status",
                    detail: "dispute \(dispute.id) of charge \(charge.id) is \(dispute.status): clawback does not decide on it alone")
            }
        }
        return .settled(
            PaymentStatement(
                paymentIntent: id, charge: charge.id, livemode: charge.livemode, amount: amount, currency: charge.currency,
                taken: min(taken, amount), chargeback: chargeback, lastChange: lastChange))
    }
}

/// Stripe's final statement of one payment: what was collected, and how much of it refunds that succeeded
/// and chargebacks not won took back (never more than was collected), in the currency's minor unit.
public struct PaymentStatement: Sendable, Equatable {
    public var paymentIntent: String
    public var charge: String
    public var livemode: Bool
    public var amount: Int64
    public var currency: String
    public var taken: Int64
    /// A chargeback (a dispute past inquiry, not won) took part of it.
    public var chargeback: Bool
    /// When the latest refund or chargeback counted was made (nil: none).
    public var lastChange: Date?
}
