public import Foundation
public import Postgres

/// A refund request as finance reads it: what Apple asked, what the studio answered and when, and what
/// Apple decided.
public struct RefundRequestLine: Sendable, Equatable {
    public var notificationUUID: String
    public var bundleID: String
    public var environment: String
    public var transactionID: String
    public var productID: String
    public var reason: String?
    public var requestedAt: Date
    public var deadline: Date
    /// received, sending, answered, not_consented, unanswerable, refused or expired; as of the report's time
    /// (a request settled later shows as received, or sending once its answer was stored).
    public var state: String
    public var answeredAt: Date?
    public var deliveryStatus: String?
    public var consumptionPercentage: Int64?
    public var refundPreference: String?
    public var unitsGranted: Int64?
    public var unitsConsumed: Int64?
    public var appleErrorCode: Int64?
    public var lastError: String?
    /// REFUND or REFUND_DECLINED, when Apple had decided by the report's time.
    public var outcome: String?
    public var outcomeAt: Date?

    public var answeredInTime: Bool { answeredAt.map { $0 <= deadline } ?? false }

    /// Units that stayed with the player because Apple declined the refund (the grant's units).
    public var unitsKept: Int64 { outcome == "REFUND_DECLINED" ? unitsGranted ?? 0 : 0 }
}

/// Reads the refund requests a report covers: those about purchases made within the report's window (the
/// purchases the report's runs check), as recorded at the report's as-of time (answers and decisions
/// recorded later are left out, so a report can be regenerated as it was).
public enum RefundRequestSource {
    public static func lines(from start: Date, to end: Date, asOf: Date, on connection: PostgresConnection) throws(ReportError) -> [RefundRequestLine]
    {
        do {
            return try connection.query(
                """
                SELECT notification_uuid::text, bundle_id, environment, transaction_id, coalesce(product_id, ''), reason, requested_at,
                    deadline,
                    CASE WHEN settled_at > \(asOf) THEN CASE WHEN answer IS NULL THEN 'received' ELSE 'sending' END ELSE state END,
                    CASE WHEN answered_at <= \(asOf) THEN answered_at END,
                    answer ->> 'deliveryStatus', (answer ->> 'consumptionPercentage')::bigint, answer ->> 'refundPreference',
                    units_granted, units_consumed, apple_error_code, last_error,
                    CASE WHEN outcome_at <= \(asOf) THEN outcome END, CASE WHEN outcome_at <= \(asOf) THEN outcome_at END
                FROM clawback.refund_requests
                WHERE coalesce(purchased_at, requested_at) >= \(start) AND coalesce(purchased_at, requested_at) < \(end) AND received_at <= \(asOf)
                ORDER BY requested_at, notification_uuid
                """
            ).rows.map { row throws(PostgresError) in
                RefundRequestLine(
                    notificationUUID: try row.decode(String.self, at: 0), bundleID: try row.decode(String.self, at: 1),
                    environment: try row.decode(String.self, at: 2), transactionID: try row.decode(String.self, at: 3),
                    productID: try row.decode(String.self, at: 4), reason: try row.decode(String?.self, at: 5),
                    requestedAt: try row.decode(Date.self, at: 6), deadline: try row.decode(Date.self, at: 7),
                    state: try row.decode(String.self, at: 8),
                    answeredAt: try row.decode(Date?.self, at: 9), deliveryStatus: try row.decode(String?.self, at: 10),
                    consumptionPercentage: try row.decode(Int64?.self, at: 11), refundPreference: try row.decode(String?.self, at: 12),
                    unitsGranted: try row.decode(Int64?.self, at: 13), unitsConsumed: try row.decode(Int64?.self, at: 14),
                    appleErrorCode: try row.decode(Int64?.self, at: 15), lastError: try row.decode(String?.self, at: 16),
                    outcome: try row.decode(String?.self, at: 17), outcomeAt: try row.decode(Date?.self, at: 18))
            }
        } catch {
            // A database that predates migration 0006 has no requests to report.
            if error.sqlState == "42P01" { return [] }
            throw .database(error)
        }
    }
}
