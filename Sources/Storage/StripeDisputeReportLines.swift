public import Foundation
import Postgres

/// A web shop's Stripe dispute as finance's report shows it (migrations 0022 and 0024), as of the report's
/// time: where its answer stood then, and its outcome and fee if Stripe had stated them by then.
public struct StripeDisputeLine: Sendable, Equatable {
    /// The shop of the disputed payment's grant; `(no grant)` for a payment the game has no grant of.
    public var shop: String
    public var disputeID: String
    /// The PaymentIntent: the grant's transaction id.
    public var paymentIntent: String?
    public var productID: String?
    /// An inquiry (`warning_…`: no money moved) rather than a chargeback, as first seen and not escalated since.
    public var inquiry: Bool
    /// When clawback first read the inquiry as a chargeback (nil: not escalated by the report's time).
    public var escalatedAt: Date?
    public var reason: String?
    public var amountMinor: Int64
    /// Stripe's lowercase currency code.
    public var currency: String
    public var purchasedAt: Date?
    public var disputedAt: Date?
    public var dueBy: Date?
    /// `observed`, `open`, `stored`, `staged`, `submitted`, `left`, `closed` or `refused`.
    public var state: String
    public var why: String?
    public var submittedAt: Date?
    /// Submitted before its deadline, as the deadline stood then.
    public var submittedInTime: Bool
    public var unitsGranted: Int64?
    public var unitsConsumed: Int64?
    public var usageEvents: Int64?
    /// `won` or `lost`.
    public var outcome: String?
    public var outcomeReadAt: Date?
    public var fee: StripeDisputeStore.Fee?
    /// The fee could not be read with the outcome (not the same as none withdrawn).
    public var feeUnknown: Bool
}

extension StripeDisputeStore {
    /// The disputes about purchases of `[start, end)` (by the purchase's date, else the dispute's), as
    /// recorded by `asOf`, in a fixed order.
    public static func reportLines(from start: Date, to end: Date, asOf: Date, on connection: DatabaseConnection) throws -> [StripeDisputeLine] {
        try connection.query(
            """
            WITH asked AS (
                -- Before it was escalated, a dispute reopened for its chargeback shows its inquiry's answer.
                SELECT d.dispute_id, d.shop, d.payment_intent, d.product_id, d.first_status, d.stripe_status, d.reason, d.amount_minor,
                    d.currency, d.purchased_at, d.disputed_at, d.seen_at, d.reopened_at, d.units_granted, d.outcome,
                    d.outcome_read_at, d.fee_minor, d.fee_currency, d.fee_unknown,
                    CASE WHEN d.escalated_at <= \(asOf) THEN d.escalated_at END AS escalated_at,
                    coalesce(i.state, d.state) AS state, CASE WHEN i.state IS NULL THEN d.why ELSE i.why END AS why,
                    CASE WHEN i.state IS NULL THEN d.due_by ELSE i.due_by END AS due_by,
                    CASE WHEN i.state IS NULL THEN d.stored_at ELSE i.stored_at END AS stored_at,
                    CASE WHEN i.state IS NULL THEN d.staged_at ELSE i.staged_at END AS staged_at,
                    CASE WHEN i.state IS NULL THEN d.submitted_at ELSE i.submitted_at END AS submitted_at,
                    CASE WHEN i.state IS NULL THEN d.submitted_in_time ELSE i.submitted_in_time END AS submitted_in_time,
                    CASE WHEN i.state IS NULL THEN d.settled_at ELSE i.settled_at END AS settled_at,
                    CASE WHEN i.state IS NULL THEN d.units_consumed ELSE i.units_consumed END AS units_consumed,
                    CASE WHEN i.state IS NULL THEN d.usage_events ELSE i.usage_events END AS usage_events
                FROM clawback.stripe_disputes d
                LEFT JOIN LATERAL jsonb_to_record(d.inquiry_answer) AS i(
                    state text, why text, stored_at timestamptz, staged_at timestamptz, submitted_at timestamptz, submitted_in_time boolean,
                    settled_at timestamptz, units_consumed bigint, usage_events integer, due_by timestamptz
                ) ON d.escalated_at > \(asOf)
                WHERE d.seen_at <= \(asOf)
                  AND coalesce(d.purchased_at, d.disputed_at, d.seen_at) >= \(start)
                  AND coalesce(d.purchased_at, d.disputed_at, d.seen_at) < \(end)
            ),
            shown AS (
                SELECT a.*,
                    CASE WHEN a.submitted_at <= \(asOf) THEN 'submitted'
                         WHEN a.state IN ('left', 'closed', 'refused') AND coalesce(a.settled_at, a.seen_at) <= \(asOf) THEN a.state
                         WHEN a.staged_at <= \(asOf) THEN 'staged'
                         WHEN a.stored_at <= \(asOf) THEN 'stored'
                         WHEN a.state = 'observed' OR a.reopened_at > \(asOf) THEN 'observed'
                         ELSE 'open' END AS shown_state
                FROM asked a
            )
            SELECT CASE WHEN purchased_at IS NULL THEN '(no grant)' ELSE shop END AS shown_shop, dispute_id, payment_intent, product_id,
                escalated_at IS NULL AND coalesce(first_status, stripe_status) LIKE 'warning\\_%' AS inquiry, escalated_at, reason,
                amount_minor, currency, purchased_at, disputed_at, due_by, shown_state,
                CASE WHEN shown_state = 'observed'
                        THEN 'not awaiting a response when first seen (' || coalesce(first_status, stripe_status) || ')'
                     WHEN shown_state IN ('left', 'closed', 'refused') THEN why END AS why,
                CASE WHEN shown_state = 'submitted' THEN submitted_at END AS submitted_at,
                CASE WHEN shown_state = 'submitted' THEN coalesce(submitted_in_time, false) END AS submitted_in_time,
                units_granted,
                CASE WHEN stored_at <= \(asOf) THEN units_consumed END AS units_consumed,
                CASE WHEN stored_at <= \(asOf) THEN usage_events END AS usage_events,
                CASE WHEN outcome_read_at <= \(asOf) THEN outcome END AS outcome,
                CASE WHEN outcome_read_at <= \(asOf) THEN outcome_read_at END AS outcome_read_at,
                CASE WHEN outcome_read_at <= \(asOf) THEN fee_minor END AS fee_minor,
                CASE WHEN outcome_read_at <= \(asOf) THEN fee_currency END AS fee_currency,
                outcome_read_at <= \(asOf) AND fee_unknown AS fee_unknown
            FROM shown
            ORDER BY shown_shop, coalesce(purchased_at, disputed_at, seen_at), dispute_id
            """
        ).rows.map { row throws(PostgresError) in
            let feeMinor = try row.decode(Int64?.self, column: "fee_minor")
            let feeCurrency = try row.decode(String?.self, column: "fee_currency")
            return StripeDisputeLine(
                shop: try row.decode(String.self, column: "shown_shop"), disputeID: try row.decode(String.self, column: "dispute_id"),
                paymentIntent: try row.decode(String?.self, column: "payment_intent"), productID: try row.decode(String?.self, column: "product_id"),
                inquiry: try row.decode(Bool.self, column: "inquiry"), escalatedAt: try row.decode(Date?.self, column: "escalated_at"),
                reason: try row.decode(String?.self, column: "reason"),
                amountMinor: try row.decode(Int64.self, column: "amount_minor"), currency: try row.decode(String.self, column: "currency"),
                purchasedAt: try row.decode(Date?.self, column: "purchased_at"), disputedAt: try row.decode(Date?.self, column: "disputed_at"),
                dueBy: try row.decode(Date?.self, column: "due_by"), state: try row.decode(String.self, column: "shown_state"),
                why: try row.decode(String?.self, column: "why"), submittedAt: try row.decode(Date?.self, column: "submitted_at"),
                submittedInTime: try row.decode(Bool?.self, column: "submitted_in_time") ?? false,
                unitsGranted: try row.decode(Int64?.self, column: "units_granted"),
                unitsConsumed: try row.decode(Int64?.self, column: "units_consumed"),
                usageEvents: try row.decode(Int64?.self, column: "usage_events"), outcome: try row.decode(String?.self, column: "outcome"),
                outcomeReadAt: try row.decode(Date?.self, column: "outcome_read_at"),
                fee: zip(feeMinor, feeCurrency).map { Fee(minor: $0, currency: $1) },
                feeUnknown: try row.decode(Bool?.self, column: "fee_unknown") ?? false)
        }
    }
}

/// Both, or nil.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
