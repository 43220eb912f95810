public import Foundation
import Postgres

/// One void of Google Play's Voided Purchases feed, as clawback keeps it.
public struct StoredVoid: Sendable, Equatable {
    public var purchaseToken: String
    public var orderID: String?
    public var purchasedAt: Date?
    public var voidedAt: Date
    public var source: Int32?
    public var reason: Int32?
    /// Units voided by a quantity-based partial refund; nil: the whole remaining quantity.
    public var quantity: Int32?

    public init(
        purchaseToken: String, orderID: String?, purchasedAt: Date?, voidedAt: Date, source: Int32?, reason: Int32?, quantity: Int32?
    ) {
        self.purchaseToken = purchaseToken
        self.orderID = orderID
        self.purchasedAt = purchasedAt
        self.voidedAt = voidedAt
        self.source = source
        self.reason = reason
        self.quantity = quantity
    }
}

/// The voids the sweep read from Google Play, and how far each app's feed was read (migration 0014).
public enum GoogleVoidStore {
    /// One sweep at a time: a second one exits 85.
    public static let lockKey = LockKey(name: "clawback google-play sweep-voids")

    /// Until when `packageName`'s feed was read whole, if ever.
    public static func cursor(packageName: String, on connection: DatabaseConnection) throws -> Date? {
        try connection.query("SELECT read_until FROM clawback.google_void_cursors WHERE package_name = \(packageName)").first?
            .decode(Date.self, at: 0)
    }

    /// A stretch of Google's recorded time no sweep read before Google stopped showing it.
    public struct Gap: Sendable, Equatable {
        public var from: Date
        public var until: Date

        public init(from: Date, until: Date) {
            self.from = from
            self.until = until
        }
    }

    /// Records `voids` of `packageName` (each once, whatever was read before) and, when the feed was read
    /// whole from `readFrom`, moves its cursor to `readUntil` (with the `gap` found, kept until another), in one
    /// transaction: a sweep killed midway recorded nothing and moved nothing. The kept voids are continuous from
    /// the first sweep's `readFrom`, and after a gap from the `readFrom` of the sweep that found it. Returns how
    /// many voids were new.
    public static func record(
        _ voids: [StoredVoid], packageName: String, readFrom: Date, readUntil: Date?, gap: Gap? = nil, on connection: DatabaseConnection
    ) throws -> Int {
        try connection.withTransaction { connection in
            var added = 0
            for start in stride(from: 0, to: voids.count, by: 1000) {
                // A batch as one JSON array (its optional fields null where Google gave none).
                let batch = voids[start..<min(start + 1000, voids.count)].map { void -> [String: Any] in
                    [
                        "token": void.purchaseToken, "order_id": void.orderID ?? NSNull(),
                        "purchased_at": void.purchasedAt.map(PostgresTimestamp.format) ?? NSNull(),
                        "voided_at": PostgresTimestamp.format(void.voidedAt), "source": void.source ?? NSNull(), "reason": void.reason ?? NSNull(),
                        "quantity": void.quantity ?? NSNull(),
                    ]
                }
                let json = String(decoding: try JSONSerialization.data(withJSONObject: batch), as: UTF8.self)
                added += try connection.execute(
                    """
                    INSERT INTO clawback.google_voided_purchases (package_name, purchase_token, order_id, purchased_at, voided_at,
                        voided_source, voided_reason, voided_quantity)
                    SELECT \(packageName), v.token, v.order_id, v.purchased_at, v.voided_at, v.source, v.reason, v.quantity
                    FROM jsonb_to_recordset(\(json)::jsonb)
                        AS v(token text, order_id text, purchased_at timestamptz, voided_at timestamptz, source smallint, reason smallint,
                             quantity integer)
                    ON CONFLICT DO NOTHING
                    """)
            }
            guard let readUntil else { return added }
            try connection.execute(
                """
                INSERT INTO clawback.google_void_cursors (package_name, read_until, gap_from, gap_until, covered_from)
                VALUES (\(packageName), \(readUntil), \(gap?.from), \(gap?.until), \(readFrom))
                ON CONFLICT (package_name) DO UPDATE SET read_until = excluded.read_until, swept_at = now(),
                    gap_from = coalesce(excluded.gap_from, google_void_cursors.gap_from),
                    gap_until = coalesce(excluded.gap_until, google_void_cursors.gap_until),
                    covered_from = CASE WHEN excluded.gap_from IS NULL THEN google_void_cursors.covered_from ELSE excluded.covered_from END
                """)
            return added
        }
    }

    /// What the kept voids of an app cover, in Google's recorded time: continuously from `from` to `until`.
    public struct Coverage: Sendable, Equatable {
        public var from: Date
        public var until: Date

        public init(from: Date, until: Date) {
            self.from = from
            self.until = until
        }
    }

    /// What `packageName`'s kept voids cover, or nil if it was never swept whole.
    public static func coverage(packageName: String, on connection: DatabaseConnection) throws -> Coverage? {
        guard
            let row = try connection.query(
                "SELECT covered_from, read_until FROM clawback.google_void_cursors WHERE package_name = \(packageName)"
            ).first
        else { return nil }
        return Coverage(from: try row.decode(Date.self, at: 0), until: try row.decode(Date.self, at: 1))
    }

    /// The last gap recorded for `packageName`, if any.
    public static func gap(packageName: String, on connection: DatabaseConnection) throws -> Gap? {
        guard
            let row = try connection.query(
                "SELECT gap_from, gap_until FROM clawback.google_void_cursors WHERE package_name = \(packageName) AND gap_from IS NOT NULL"
            ).first
        else { return nil }
        return Gap(from: try row.decode(Date.self, at: 0), until: try row.decode(Date.self, at: 1))
    }

    /// The purchase tokens of `packageName` whose voids the sweep kept, or a real-time notification named,
    /// at or after `keptSince` (when clawback stored them): what Google voided since, as far as clawback has
    /// read, whenever Google says the void happened.
    public static func tokensKept(packageName: String, since keptSince: Date, on connection: DatabaseConnection) throws
        -> [String]
    {
        try connection.query(
            """
            SELECT purchase_token FROM clawback.google_voided_purchases
            WHERE package_name = \(packageName) AND read_at >= \(keptSince)
            UNION
            SELECT purchase_token FROM clawback.google_notifications
            WHERE kind = 'voided' AND package_name = \(packageName) AND received_at >= \(keptSince)
            ORDER BY purchase_token
            """
        ).rows.map { row throws(PostgresError) in try row.decode(String.self, at: 0) }
    }

    /// Every void kept for `packageName` (voided at `since` or later, when given), oldest first.
    public static func voids(packageName: String, since: Date? = nil, on connection: DatabaseConnection) throws
        -> [StoredVoid]
    {
        try connection.query(
            """
            SELECT purchase_token, order_id, purchased_at, voided_at, voided_source, voided_reason, voided_quantity
            FROM clawback.google_voided_purchases
            WHERE package_name = \(packageName) AND (\(since)::timestamptz IS NULL OR voided_at >= \(since)::timestamptz)
            ORDER BY voided_at, purchase_token, voided_quantity NULLS LAST
            """
        ).rows.map { row throws(PostgresError) in
            StoredVoid(
                purchaseToken: try row.decode(String.self, at: 0), orderID: try row.decode(String?.self, at: 1),
                purchasedAt: try row.decode(Date?.self, at: 2), voidedAt: try row.decode(Date.self, at: 3),
                source: try row.decode(Int32?.self, at: 4), reason: try row.decode(Int32?.self, at: 5), quantity: try row.decode(Int32?.self, at: 6))
        }
    }
}

extension GoogleVoidStore {
    /// The sweep's voids: a run reads only those voided in its window, far younger than the retention.
    public static let records = StoreRecords(label: "Google Play voids", table: "clawback.google_voided_purchases", lastTouched: "voided_at")
}
