public import Foundation
import Postgres
public import Reconciliation

/// Which grants a run covers.
public struct GrantSelection: Sendable, Equatable {
    public var window: ReconciliationWindow
    /// Empty: every bundle.
    public var bundleIDs: [String]
    public var playerID: String?
    public var transactionID: String?
    public var shardIndex: Int
    public var shardCount: Int
    /// Only these transactions, when set: the daily run's narrowing to what the refund feed names, found at
    /// run time (so not part of the run's scope key; nil: no such narrowing).
    public var transactionIDs: [String]?
    /// Only grants bought before this instant, when set: a daily run's pass over an older window checks only
    /// the months of it that no later window holds (`DailyRun`), so each purchase is checked once, under the
    /// latest window that holds it. Not part of the scope key: the window and the strategy name the pass.
    public var purchasedBefore: Date?
    /// The store whose grants are read: a run asks one store (its strategy's), so it is not part of the
    /// scope key beside the strategy.
    public var store: Store

    public init(
        window: ReconciliationWindow, bundleIDs: [String] = [], playerID: String? = nil, transactionID: String? = nil,
        shardIndex: Int = 0, shardCount: Int = 1, store: Store = StoreCatalog.importDefault
    ) {
        self.store = store
        self.window = window
        self.bundleIDs = bundleIDs.sorted()
        self.playerID = playerID
        self.transactionID = transactionID
        self.shardIndex = shardIndex
        self.shardCount = max(1, shardCount)
    }
}

/// Where the last page ended: grants are read in (purchased_at, transaction_id) order, a page at a time,
/// so no transaction or cursor stays open while Apple is asked.
public struct GrantCursor: Sendable, Equatable {
    public var purchasedAt: Date
    public var transactionID: String

    public init(purchasedAt: Date, transactionID: String) {
        self.purchasedAt = purchasedAt
        self.transactionID = transactionID
    }
}

/// A page of grants and where the next one starts.
public struct GrantPage: Sendable {
    public var grants: [Grant] = []
    /// After the last grant read (checked or not); nil when nothing was left to read.
    public var next: GrantCursor?

    public init() {}
}

/// Reads grants.
public enum GrantStore {
    static let columns = """
        g.transaction_id, g.original_transaction_id, g.bundle_id, g.product_id, g.environment, g.player_id,
        g.app_account_token, g.quantity, g.units_granted, g.price_milli, g.currency, g.storefront, g.purchased_at, g.receipt,
        g.store::text, g.order_id
        """
    static let columnCount = columns.split(separator: ",").count

    /// The next page of the selection after `cursor`: up to `limit` grants in (purchased_at,
    /// transaction_id) order, less those `runID` already checked with a verified verdict or holds in a check
    /// page (so a resumed run
    /// re-asks only what is left or was unverified; nil when the run had checked nothing when it started,
    /// as then no grant after the cursor can have been). `next` is nil once the selection is exhausted.
    ///
    /// Whether a grant was checked is a per-row probe of the checks' primary key in the select list, not
    /// a NOT EXISTS anti-join: once the checks table's statistics show the run's rows, PostgreSQL planned
    /// the anti-join as a hash of every check of the run, rebuilt for each page, and a million-grant run
    /// slowed fivefold halfway through.
    public static func page(
        _ selection: GrantSelection, after cursor: GrantCursor?, excludingCheckedBy runID: Int64?, limit: Int,
        on connection: DatabaseConnection
    ) throws -> GrantPage {
        let checked: PostgresQuery =
            if let runID {
                """
                EXISTS (SELECT 1 FROM clawback.checks c
                        WHERE c.run_id = \(runID) AND c.transaction_id = g.transaction_id AND c.verdict <> 'unverified')
                """
            } else {
                "false"
            }
        let result = try connection.query(
            """
            SELECT \(unescaped: columns), \(fragment: checked)
            FROM clawback.grants g
            WHERE \(fragment: filter(selection))
              AND (\(cursor?.purchasedAt)::timestamptz IS NULL
                   OR (g.purchased_at, g.transaction_id) > (\(cursor?.purchasedAt)::timestamptz, \(cursor?.transactionID)::text))
            ORDER BY g.purchased_at, g.transaction_id
            LIMIT \(limit)
            """)
        var page = GrantPage()
        page.grants.reserveCapacity(result.rows.count)
        for row in result.rows {
            let grant = try grant(row)
            page.next = GrantCursor(purchasedAt: grant.purchasedAt, transactionID: grant.transactionID)
            if try !row.decode(Bool.self, at: columnCount) { page.grants.append(grant) }
        }
        if let runID, let first = page.grants.first, let last = page.grants.last {
            let paged = try pagedTransactions(of: runID, from: first.purchasedAt, through: last.purchasedAt, on: connection)
            if !paged.isEmpty { page.grants.removeAll { paged.contains($0.transactionID) } }
        }
        return page
    }

    /// The transactions `runID`'s check pages hold among grants bought in [`from`, `through`]: one lookup
    /// per page of grants read (a per-row probe would scan each page's array), only for a resumed run.
    static func pagedTransactions(of runID: Int64, from: Date, through: Date, on connection: DatabaseConnection) throws -> Set<String> {
        var paged: Set<String> = []
        for row in try connection.query(
            """
            SELECT g.transaction_id
            FROM clawback.check_pages p
            CROSS JOIN LATERAL unnest(p.transaction_ids, p.purchased_ats) AS g(transaction_id, purchased_at)
            WHERE tstzrange(p.first_purchased_at, p.last_purchased_at, '[]') && tstzrange(\(from), \(through), '[]') AND p.run_id = \(runID)
              AND g.purchased_at BETWEEN \(from) AND \(through)
            """
        ).rows {
            paged.insert(try row.decode(String.self, at: 0))
        }
        return paged
    }

    /// How many grants the selection holds (for progress and completeness figures).
    public static func count(_ selection: GrantSelection, on connection: DatabaseConnection) throws -> Int {
        try connection.query(
            """
            SELECT count(*) FROM clawback.grants g WHERE \(fragment: filter(selection))
            """
        ).first?.decode(Int.self, at: 0) ?? 0
    }

    /// The selection as a condition on `clawback.grants g`: one store's grants (a run asks one store).
    static func filter(_ selection: GrantSelection) -> PostgresQuery {
        """
        g.store = \(selection.store.rawValue)::clawback.store AND g.purchased_at >= \(selection.window.start) AND g.purchased_at < \(selection.window.end)
          AND (\(selection.purchasedBefore)::timestamptz IS NULL OR g.purchased_at < \(selection.purchasedBefore)::timestamptz)
          AND (cardinality(\(selection.bundleIDs)::text[]) = 0 OR g.bundle_id = ANY(\(selection.bundleIDs)::text[]))
          AND (\(selection.playerID)::text IS NULL OR g.player_id = \(selection.playerID))
          AND (\(selection.transactionID)::text IS NULL OR g.transaction_id = \(selection.transactionID))
          AND (\(selection.transactionIDs)::text[] IS NULL OR g.transaction_id = ANY(\(selection.transactionIDs)::text[]))
          AND (\(selection.shardCount)::integer = 1 OR clawback.shard_of(g.transaction_id, \(selection.shardCount)) = \(selection.shardIndex))
        """
    }

    static func grant(_ row: PostgresRow) throws -> Grant {
        let store = try row.decode(Store.self, at: 14)
        // The grants table allows Production and Sandbox only; anything else is not a grant this version can judge.
        let environment = StoreEnvironment(rawValue: try row.decode(String.self, at: 4))
        if case .other(let value) = environment {
            throw PostgresError(.decoding, operation: "reading a grant", message: "environment \(value) is not Production or Sandbox")
        }
        return Grant(
            transactionID: try row.decode(String.self, at: 0), originalTransactionID: try row.decode(String.self, at: 1),
            bundleID: try row.decode(String.self, at: 2), productID: try row.decode(String.self, at: 3),
            environment: environment, playerID: try row.decode(String.self, at: 5),
            appAccountToken: try row.decode(UUID?.self, at: 6), quantity: try row.decode(Int32.self, at: 7),
            unitsGranted: try row.decode(Int64.self, at: 8), priceMilli: try row.decode(Int64?.self, at: 9),
            currency: try row.decode(String?.self, at: 10), storefront: try row.decode(String?.self, at: 11),
            purchasedAt: try row.decode(Date.self, at: 12), receipt: try row.decode(String?.self, at: 13),
            store: store, orderID: try row.decode(String?.self, at: 15))
    }
}

/// Reads the clawback ledger.
public enum LedgerHistoryReader {
    /// Every transaction's entries so far, in order.
    public static func histories(for transactionIDs: [String], on connection: DatabaseConnection) throws -> [String: LedgerHistory] {
        guard !transactionIDs.isEmpty else { return [:] }
        var histories: [String: LedgerHistory] = [:]
        let rows = try connection.query(
            """
            SELECT transaction_id, entry_id, kind, idempotency_key, units, reverses_entry_id
            FROM clawback.ledger WHERE transaction_id = ANY(\(transactionIDs)::text[]) ORDER BY entry_id
            """
        ).rows
        for row in rows {
            let entry = LedgerEntry(
                entryID: try row.decode(Int64.self, at: 1), kind: try row.decode(LedgerKind.self, at: 2),
                idempotencyKey: try row.decode(String.self, at: 3), units: try row.decode(Int64.self, at: 4),
                reversesEntryID: try row.decode(Int64?.self, at: 5))
            histories[try row.decode(String.self, at: 0), default: LedgerHistory()].entries.append(entry)
        }
        return histories
    }
}
