public import Foundation
import Postgres

/// Radar's early fraud warnings about the web shop's granted payments (migration 0025), kept by `clawback
/// stripe disputes` for finance's reports. A warning moves no money; clawback never refunds one.
public enum StripeFraudWarningStore {
    /// A warning as the job read it, about a payment the game granted in `shop`.
    public struct Seen: Sendable, Equatable {
        public var warningID: String
        public var shop: String
        public var paymentIntent: String
        public var charge: String?
        public var fraudType: String
        public var actionable: Bool
        public var warnedAt: Date

        public init(warningID: String, shop: String, paymentIntent: String, charge: String?, fraudType: String, actionable: Bool, warnedAt: Date) {
            self.warningID = warningID
            self.shop = shop
            self.paymentIntent = paymentIntent
            self.charge = charge
            self.fraudType = fraudType
            self.actionable = actionable
            self.warnedAt = warnedAt
        }
    }

    /// Records each warning once, with its grant's purchase time, product and units; one seen before keeps
    /// what it was recorded with, and Stripe's latest `actionable`.
    public static func record(_ seen: [Seen], on connection: DatabaseConnection) throws {
        for warning in seen {
            try connection.execute(
                """
                INSERT INTO clawback.stripe_fraud_warnings (
                    warning_id, shop, payment_intent, charge, fraud_type, actionable, warned_at, purchased_at, product_id, units_granted)
                SELECT \(warning.warningID), \(warning.shop), \(warning.paymentIntent), \(warning.charge), \(warning.fraudType),
                    \(warning.actionable)::boolean, \(warning.warnedAt)::timestamptz, g.purchased_at, g.product_id, g.units_granted
                FROM (SELECT 1) AS one
                LEFT JOIN LATERAL (
                    SELECT purchased_at, product_id, units_granted FROM clawback.grants
                    WHERE transaction_id = \(warning.paymentIntent) AND store = 'stripe' AND bundle_id = \(warning.shop) LIMIT 1
                ) AS g ON true
                ON CONFLICT (warning_id) DO UPDATE SET actionable = excluded.actionable
                """)
        }
    }

    public static func count(on connection: DatabaseConnection) throws -> Int {
        try connection.query("SELECT count(*)::bigint FROM clawback.stripe_fraud_warnings").first?.decode(Int.self, at: 0) ?? 0
    }

    /// The warnings about purchases of `[start, end)` (by the purchase's date, else the warning's) first seen
    /// by `asOf`, with the dispute that followed as recorded by then, in a fixed order.
    public static func reportLines(from start: Date, to end: Date, asOf: Date, on connection: DatabaseConnection) throws -> [StripeFraudWarningLine] {
        try connection.query(
            """
            SELECT w.shop, w.warning_id, w.payment_intent, w.product_id, w.fraud_type, w.warned_at, w.purchased_at, w.units_granted,
                d.dispute_id, CASE WHEN d.outcome_read_at <= \(asOf) THEN d.outcome END AS outcome
            FROM clawback.stripe_fraud_warnings w
            LEFT JOIN LATERAL (
                SELECT dispute_id, outcome, outcome_read_at FROM clawback.stripe_disputes
                WHERE payment_intent = w.payment_intent AND seen_at <= \(asOf) ORDER BY disputed_at NULLS LAST, dispute_id LIMIT 1
            ) AS d ON true
            WHERE w.seen_at <= \(asOf) AND coalesce(w.purchased_at, w.warned_at) >= \(start) AND coalesce(w.purchased_at, w.warned_at) < \(end)
            ORDER BY w.shop, coalesce(w.purchased_at, w.warned_at), w.warning_id
            """
        ).rows.map { row throws(PostgresError) in
            StripeFraudWarningLine(
                shop: try row.decode(String.self, column: "shop"), warningID: try row.decode(String.self, column: "warning_id"),
                paymentIntent: try row.decode(String.self, column: "payment_intent"), productID: try row.decode(String?.self, column: "product_id"),
                fraudType: try row.decode(String.self, column: "fraud_type"), warnedAt: try row.decode(Date.self, column: "warned_at"),
                purchasedAt: try row.decode(Date?.self, column: "purchased_at"), unitsGranted: try row.decode(Int64?.self, column: "units_granted"),
                disputeID: try row.decode(String?.self, column: "dispute_id"), disputeOutcome: try row.decode(String?.self, column: "outcome"))
        }
    }
}

/// An early fraud warning as finance's report shows it, as of the report's time.
public struct StripeFraudWarningLine: Sendable, Equatable {
    public var shop: String
    public var warningID: String
    public var paymentIntent: String
    public var productID: String?
    public var fraudType: String
    public var warnedAt: Date
    public var purchasedAt: Date?
    public var unitsGranted: Int64?
    /// The dispute of the same payment recorded by then, and its outcome once Stripe stated it.
    public var disputeID: String?
    public var disputeOutcome: String?
}

extension StripeFraudWarningStore {
    /// Early fraud warnings, by when they were issued or first seen.
    public static let records = StoreRecords(
        label: "Stripe early fraud warnings", table: "clawback.stripe_fraud_warnings", lastTouched: "greatest(warned_at, seen_at)")
}
