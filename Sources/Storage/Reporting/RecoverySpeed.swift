public import Foundation
import Postgres
public import Reconciliation

/// How fast refunded units come back, per store: from the store's refund (Apple's revocation date, Google's
/// refund time, as the check recorded it) to the purchase's first clawback entry, and to the game's
/// acknowledgement of it; and the share of the units taken back that the game recovered. The figure a studio
/// watches to know its schedules work: daily runs put a refund on the ledger within a day, monthly runs
/// within a month.
public struct RecoverySpeed: Sendable, Equatable {
    public var store: Store
    /// First clawback entries with the store's refund time.
    public var refunds: Int
    /// Seconds from the store's refund to the ledger entry: median and 99th percentile (nil: no refund).
    public var toLedgerMedian: Double?
    public var toLedgerP99: Double?
    /// Of those, the ones the game acknowledged (by `asOf`), and the seconds to that acknowledgement.
    public var acknowledged: Int
    public var toAcknowledgementMedian: Double?
    public var toAcknowledgementP99: Double?
    /// Units the take-back entries (clawbacks and adjustments) asked for, and what the game applied of them.
    public var unitsOwed: Int64
    public var unitsRecovered: Int64

    public init(
        store: Store, refunds: Int, toLedgerMedian: Double?, toLedgerP99: Double?, acknowledged: Int, toAcknowledgementMedian: Double?,
        toAcknowledgementP99: Double?, unitsOwed: Int64, unitsRecovered: Int64
    ) {
        self.store = store
        self.refunds = refunds
        self.toLedgerMedian = toLedgerMedian
        self.toLedgerP99 = toLedgerP99
        self.acknowledged = acknowledged
        self.toAcknowledgementMedian = toAcknowledgementMedian
        self.toAcknowledgementP99 = toAcknowledgementP99
        self.unitsOwed = unitsOwed
        self.unitsRecovered = unitsRecovered
    }

    /// Which ledger entries are measured.
    public enum Entries: Sendable {
        /// Those a report's runs wrote, with what the game acknowledged by `asOf` (so a report written again
        /// `--as-of` the same instant reads the same).
        case runs([Int64], asOf: Date)
        /// `store`'s entries written since `since` (the metrics file's last 30 days).
        case recent(Store, since: Date)
    }

    /// One row per store that has measured entries, in the stores' order.
    public static func measure(_ entries: Entries, on connection: DatabaseConnection) throws -> [RecoverySpeed] {
        let filter: PostgresQuery
        let asOf: Date
        switch entries {
        case .runs(let runIDs, let at):
            filter = "l.run_id = \(fragment: ReportStore.anyOf(runIDs))"
            asOf = at
        case .recent(let store, let since):
            filter = "l.store = \(store.rawValue)::clawback.store AND l.created_at >= \(since)"
            asOf = .distantFuture
        }
        // percentile_cont ignores NULLs: an entry not acknowledged yet counts for the ledger's delay only.
        let rows = try connection.query(
            """
            WITH taken AS (
                SELECT l.store::text AS store, l.kind, l.units,
                       extract(epoch FROM l.created_at - l.revocation_date)::float8 AS to_ledger,
                       extract(epoch FROM a.acknowledged_at - l.revocation_date)::float8 AS to_acknowledgement,
                       CASE WHEN a.outcome IN ('applied', 'partial') THEN a.units_applied ELSE 0 END AS applied
                FROM clawback.ledger l
                LEFT JOIN clawback.ledger_acknowledgements a ON a.entry_id = l.entry_id AND a.acknowledged_at <= \(asOf)
                WHERE \(fragment: filter) AND l.units > 0 AND l.kind IN ('clawback', 'adjustment')
            )
            SELECT store,
                   count(*) FILTER (WHERE kind = 'clawback' AND to_ledger IS NOT NULL)::bigint,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY to_ledger) FILTER (WHERE kind = 'clawback'),
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY to_ledger) FILTER (WHERE kind = 'clawback'),
                   count(to_acknowledgement) FILTER (WHERE kind = 'clawback' AND to_ledger IS NOT NULL)::bigint,
                   percentile_cont(0.5) WITHIN GROUP (ORDER BY to_acknowledgement) FILTER (WHERE kind = 'clawback' AND to_ledger IS NOT NULL),
                   percentile_cont(0.99) WITHIN GROUP (ORDER BY to_acknowledgement) FILTER (WHERE kind = 'clawback' AND to_ledger IS NOT NULL),
                   sum(units)::bigint, sum(applied)::bigint
            FROM taken GROUP BY store ORDER BY store
            """)
        return try rows.rows.map { row throws(PostgresError) in
            RecoverySpeed(
                store: try row.decode(Store.self, at: 0), refunds: try row.decode(Int.self, at: 1),
                toLedgerMedian: try row.decode(Double?.self, at: 2),
                toLedgerP99: try row.decode(Double?.self, at: 3), acknowledged: try row.decode(Int.self, at: 4),
                toAcknowledgementMedian: try row.decode(Double?.self, at: 5), toAcknowledgementP99: try row.decode(Double?.self, at: 6),
                unitsOwed: try row.decode(Int64.self, at: 7), unitsRecovered: try row.decode(Int64.self, at: 8))
        }
    }
}

extension ReportStore {
    /// How fast the refunds the report's runs took back came back (`RecoverySpeed`).
    public func recoverySpeed(_ runIDs: [Int64], asOf: Date) throws(Failure) -> [RecoverySpeed] {
        do {
            return try RecoverySpeed.measure(.runs(runIDs, asOf: asOf), on: connection)
        } catch {
            throw .reading(error)
        }
    }
}
