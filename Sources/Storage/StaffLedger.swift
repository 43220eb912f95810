public import Foundation
import Postgres
public import Reconciliation

/// The ledger as staff and finance read it: entries with their acknowledgement, filtered; one entry with
/// its check and its chain; what is still pending and for how long.
public enum StaffLedger {
    /// Which entries to list. Every field narrows; nil or false leaves it open.
    public struct Filter: Sendable, Equatable {
        public var playerID: String?
        public var transactionID: String?
        /// Only entries the game has yet to apply (not acknowledged, not reviews).
        public var pendingOnly = false
        public var kind: LedgerKind?
        public var outcome: AcknowledgementOutcome?
        public var since: Date?
        public var limit = 100

        public init() {}
    }

    /// An entry with its acknowledgement, if any.
    public struct Entry: Sendable, Equatable {
        public var entryID: Int64
        public var transactionID: String
        public var kind: LedgerKind
        public var units: Int64
        public var reversesEntryID: Int64?
        public var playerID: String
        public var bundleID: String
        public var productID: String
        public var runID: Int64
        public var createdAt: Date
        public var reason: String?
        public var outcome: AcknowledgementOutcome?
        public var unitsApplied: Int64?
        public var note: String?
        public var acknowledgedBy: String?
        public var acknowledgedAt: Date?
    }

    static let columns = """
        l.entry_id, l.transaction_id, l.kind, l.units, l.reverses_entry_id, l.player_id, l.bundle_id, l.product_id, l.run_id,
        l.created_at, l.reason, a.outcome, a.units_applied, a.note, a.acknowledged_by, a.acknowledged_at
        """

    public static func list(_ filter: Filter, on connection: DatabaseConnection) throws -> [Entry] {
        try connection.query(
            """
            SELECT \(unescaped: columns)
            FROM clawback.ledger l LEFT JOIN clawback.ledger_acknowledgements a USING (entry_id)
            WHERE (\(filter.playerID)::text IS NULL OR l.player_id = \(filter.playerID))
              AND (\(filter.transactionID)::text IS NULL OR l.transaction_id = \(filter.transactionID))
              AND (NOT \(filter.pendingOnly) OR (a.entry_id IS NULL AND l.kind <> 'review'))
              AND (\(filter.kind?.rawValue)::text IS NULL OR l.kind = \(filter.kind?.rawValue))
              AND (\(filter.outcome?.rawValue)::text IS NULL OR a.outcome = \(filter.outcome?.rawValue))
              AND (\(filter.since)::timestamptz IS NULL OR l.created_at >= \(filter.since))
            ORDER BY l.entry_id
            LIMIT \(max(1, filter.limit))
            """
        ).rows.map(entry)
    }

    /// One entry and every entry of its transaction (its reversal chain), oldest first.
    public static func chain(of entryID: Int64, on connection: DatabaseConnection) throws -> [Entry] {
        try connection.query(
            """
            SELECT \(unescaped: columns)
            FROM clawback.ledger l LEFT JOIN clawback.ledger_acknowledgements a USING (entry_id)
            WHERE l.transaction_id = (SELECT transaction_id FROM clawback.ledger WHERE entry_id = \(entryID))
            ORDER BY l.entry_id
            """
        ).rows.map(entry)
    }

    /// The check the entry came from (its run's verdict and Apple's facts), as name and value pairs.
    public static func check(of entry: Entry, on connection: DatabaseConnection) throws -> [(String, String)] {
        guard
            let row = try connection.query(
                """
                SELECT verdict, action, coalesce(apple_environment, ''), coalesce(revocation_date::text, ''), coalesce(revocation_type, ''),
                    coalesce(revocation_reason::text, ''), coalesce(revocation_percentage::text, ''), coalesce(detail, '')
                FROM clawback.checks WHERE run_id = \(entry.runID) AND transaction_id = \(entry.transactionID)
                """
            ).first
        else { return [] }
        return try [
            "verdict", "action", "Apple's environment", "revocation date", "revocation type", "revocation reason",
            "revocation percentage (milli)", "detail",
        ].enumerated().map { index, name in (name, try row.decode(String.self, at: index)) }
    }

    /// Entries the game has yet to apply, and the oldest one's age: what monitoring watches daily.
    public struct Pending: Sendable, Equatable {
        public var entries: Int
        public var oldestAgeSeconds: Double

        public init(entries: Int, oldestAgeSeconds: Double) {
            self.entries = entries
            self.oldestAgeSeconds = oldestAgeSeconds
        }
    }

    public static func pending(on connection: DatabaseConnection) throws -> Pending {
        let row = try connection.query(
            """
            SELECT count(*), coalesce(extract(epoch FROM now() - min(l.created_at)), 0)::float8
            FROM clawback.ledger l
            WHERE l.kind <> 'review' AND NOT EXISTS (SELECT 1 FROM clawback.ledger_acknowledgements a WHERE a.entry_id = l.entry_id)
            """
        ).first
        return Pending(entries: try row?.decode(Int.self, at: 0) ?? 0, oldestAgeSeconds: try row?.decode(Double.self, at: 1) ?? 0)
    }

    /// Records a staff waiver of an entry the game has not applied: who decided and why, final like every
    /// acknowledgement. False when the same waiver was recorded before.
    public static func waive(_ entryID: Int64, by person: String, reason: String, on connection: DatabaseConnection) throws -> Bool {
        try connection.query("SELECT clawback.staff_waive(\(entryID), \(person), \(reason))").first?
            .decode(Bool.self, at: 0) ?? false
    }

    /// Decoded by column name, so that a column added to `columns` cannot shift the others; the kinds and
    /// outcomes into their enums here, at the database's edge, so a value the schema's CHECK allows but this
    /// binary does not know fails loudly instead of travelling on as text.
    static func entry(_ row: PostgresRow) throws -> Entry {
        Entry(
            entryID: try row.decode(Int64.self, column: "entry_id"), transactionID: try row.decode(String.self, column: "transaction_id"),
            kind: try row.decode(LedgerKind.self, column: "kind"), units: try row.decode(Int64.self, column: "units"),
            reversesEntryID: try row.decode(Int64?.self, column: "reverses_entry_id"), playerID: try row.decode(String.self, column: "player_id"),
            bundleID: try row.decode(String.self, column: "bundle_id"), productID: try row.decode(String.self, column: "product_id"),
            runID: try row.decode(Int64.self, column: "run_id"), createdAt: try row.decode(Date.self, column: "created_at"),
            reason: try row.decode(String?.self, column: "reason"), outcome: try row.decode(AcknowledgementOutcome?.self, column: "outcome"),
            unitsApplied: try row.decode(Int64?.self, column: "units_applied"), note: try row.decode(String?.self, column: "note"),
            acknowledgedBy: try row.decode(String?.self, column: "acknowledged_by"),
            acknowledgedAt: try row.decode(Date?.self, column: "acknowledged_at"))
    }
}
