public import Foundation
public import Postgres
public import Reconciliation
import Storage

/// Which runs a report covers.
public enum ReportScope: Sendable, Equatable, CustomStringConvertible {
    /// One run, whatever its window, shard or dry-run flag.
    case run(Int64)
    /// Every run (not dry runs) of exactly this window, merged: its shards, its per-bundle runs, and later
    /// reruns, each purchase reported from the latest run that checked it.
    case window(ReconciliationWindow)

    public var description: String {
        switch self {
        case .run(let id): "run \(id)"
        case .window(let window): "window \(window.label)"
        }
    }
}

/// Reads a report's data from runs, checks and ledger. Every query orders its rows fully, so the same data
/// always gives the same bytes.
public enum ReportSource {
    public static func runs(_ scope: ReportScope, on connection: PostgresConnection) throws(ReportError) -> [ReportRun] {
        do {
            let covered: [RunStore.CheckedRun] =
                switch scope {
                case .run(let id): try RunStore.covered(run: id, window: nil, on: connection)
                case .window(let window): try RunStore.covered(run: nil, window: window, on: connection)
                }
            return try covered.map { covered in
                let run = covered.run
                // Read through the runs store, which owns the counters' JSON: a renamed figure cannot silently read as 0.
                let counters = try RunStore.counters(of: run)
                var narrowed: [String] = []
                if !run.bundleIDs.isEmpty { narrowed.append("bundle " + run.bundleIDs.joined(separator: ", ")) }
                if let player = run.playerID { narrowed.append("player " + player) }
                if let transaction = run.transactionID { narrowed.append("transaction " + transaction) }
                return ReportRun(
                    runID: run.runID, windowStart: run.windowStart, windowEnd: run.windowEnd, shardIndex: run.shardIndex,
                    shardCount: run.shardCount, strategy: run.strategy, dryRun: run.dryRun, status: run.status.rawValue,
                    attempts: run.attempts, narrowedTo: narrowed.isEmpty ? nil : narrowed.joined(separator: ", "),
                    grantsInScope: counters.grantsInScope, appleRequests: counters.appleRequests,
                    appleRateLimited: counters.appleRateLimited, rejectedNotifications: counters.rejectedNotifications,
                    missedNotifications: counters.missedNotifications, checks: covered.checks)
            }
        } catch let error as PostgresError {
            throw ReportError.database(error)
        } catch {
            throw ReportError.badData("\(error)")
        }
    }

    /// `ANY($n)` over the run ids, bound as one array parameter.
    static func anyOf(_ runIDs: [Int64]) -> PostgresQuery {
        "ANY(\(runIDs.map(String.init))::text[]::bigint[])"
    }

    /// The latest check of each transaction among `runIDs` (a later rerun supersedes an earlier answer).
    static func latestChecks(_ runIDs: [Int64]) -> PostgresQuery {
        """
        SELECT DISTINCT ON (transaction_id) * FROM clawback.checks
        WHERE run_id = \(fragment: anyOf(runIDs))
        ORDER BY transaction_id, run_id DESC
        """
    }

    /// Verdicts of every purchase the runs checked, one per transaction.
    public static func verdictCounts(_ runIDs: [Int64], on connection: PostgresConnection) throws(ReportError) -> [String: Int] {
        do throws(PostgresError) {
            var counts: [String: Int] = [:]
            for row in try connection.query(
                "WITH latest AS (\(fragment: latestChecks(runIDs))) SELECT verdict, count(*) FROM latest GROUP BY verdict"
            ).rows {
                counts[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
            }
            return counts
        } catch {
            throw ReportError.database(error)
        }
    }

    public static func ledgerEntryCount(_ runIDs: [Int64], on connection: PostgresConnection) throws(ReportError) -> Int {
        do throws(PostgresError) {
            return try connection.query(
                "SELECT count(*) FROM clawback.ledger WHERE run_id = \(fragment: anyOf(runIDs))"
            ).first?.decode(Int.self, at: 0) ?? 0
        } catch {
            throw ReportError.database(error)
        }
    }

    /// Streams the flagged purchases (verdict other than ok) in purchase-date order, never all in memory, each
    /// with its ledger position: the latest take-back or give-back these runs wrote for it, and the game's
    /// acknowledgement of it as recorded by `asOf` (a later acknowledgement reads as still pending).
    public static func flagged(
        _ runIDs: [Int64], asOf: Date, on connection: PostgresConnection, _ body: (FlaggedPurchase) throws(ReportError) -> Void
    ) throws(ReportError) {
        let query: PostgresQuery = """
            WITH latest AS (\(fragment: latestChecks(runIDs)))
            SELECT run_id, bundle_id, environment, transaction_id, original_transaction_id, player_id, product_id, quantity,
                units_granted, units_clawed_back,
                coalesce((SELECT sum(e.units) FROM clawback.ledger e
                          WHERE e.transaction_id = l.transaction_id AND e.run_id = \(fragment: anyOf(runIDs))), 0),
                verdict, action, revocation_date, revocation_type, revocation_reason, revocation_percentage, purchased_at,
                apple_price_milli, apple_currency, apple_storefront, detail,
                p.entry_id, p.units, p.created_at, p.outcome, p.units_applied, p.acknowledged_at
            FROM latest l
            LEFT JOIN LATERAL (
                SELECT e.entry_id, e.units, e.created_at, a.outcome, a.units_applied, a.acknowledged_at
                FROM clawback.ledger e
                LEFT JOIN clawback.ledger_acknowledgements a ON a.entry_id = e.entry_id AND a.acknowledged_at <= \(asOf)
                WHERE e.transaction_id = l.transaction_id AND e.run_id = \(fragment: anyOf(runIDs)) AND e.kind <> 'review'
                  AND e.created_at <= \(asOf)
                ORDER BY e.entry_id DESC LIMIT 1
            ) p ON true
            WHERE verdict <> 'ok'
            ORDER BY purchased_at, transaction_id
            """
        var failure: ReportError?
        do {
            try connection.stream(query, chunkSize: 500) { rows in
                for row in rows {
                    do {
                        try body(try purchase(row))
                    } catch let error as ReportError {
                        failure = error
                        throw error
                    }
                }
            }
        } catch let error as PostgresError {
            throw failure ?? ReportError.database(error)
        } catch {
            throw failure ?? ReportError.badData("\(error)")
        }
    }

    /// Columns 22 to 27: the ledger position, absent when these runs wrote no take-back or give-back for it.
    static func position(_ row: PostgresRow) throws(PostgresError) -> LedgerPosition? {
        guard let entryID = try row.decode(Int64?.self, at: 22) else { return nil }
        return LedgerPosition(
            entryID: entryID, units: try row.decode(Int64.self, at: 23), createdAt: try row.decode(Date.self, at: 24),
            outcome: try row.decode(String?.self, at: 25), unitsApplied: try row.decode(Int64?.self, at: 26),
            acknowledgedAt: try row.decode(Date?.self, at: 27))
    }

    /// The database's clock: a report's default as-of time, so that it agrees with the acknowledgements'.
    public static func databaseNow(on connection: PostgresConnection) throws(ReportError) -> Date {
        let now: Date?
        do throws(PostgresError) {
            now = try connection.query("SELECT clock_timestamp()").first?.decode(Date.self, at: 0)
        } catch {
            throw ReportError.database(error)
        }
        guard let now else { throw ReportError.badData("the database did not tell its time") }
        return now
    }

    static func purchase(_ row: PostgresRow) throws(ReportError) -> FlaggedPurchase {
        do throws(PostgresError) {
            return FlaggedPurchase(
                runID: try row.decode(Int64.self, at: 0), bundleID: try row.decode(String.self, at: 1),
                environment: try row.decode(String.self, at: 2), transactionID: try row.decode(String.self, at: 3),
                originalTransactionID: try row.decode(String.self, at: 4), playerID: try row.decode(String.self, at: 5),
                productID: try row.decode(String.self, at: 6), quantity: try row.decode(Int.self, at: 7),
                unitsGranted: try row.decode(Int64.self, at: 8), unitsClawedBack: try row.decode(Int64.self, at: 9),
                unitsChange: try row.decode(Int64.self, at: 10), verdict: try row.decode(String.self, at: 11),
                action: try row.decode(String.self, at: 12), revocationDate: try row.decode(Date?.self, at: 13),
                revocationType: try row.decode(String?.self, at: 14), revocationReason: try row.decode(Int?.self, at: 15),
                revocationPercentage: try row.decode(Int?.self, at: 16), purchasedAt: try row.decode(Date.self, at: 17),
                applePriceMilli: try row.decode(Int64?.self, at: 18), appleCurrency: try row.decode(String?.self, at: 19),
                appleStorefront: try row.decode(String?.self, at: 20), detail: try row.decode(String?.self, at: 21),
                position: try position(row))
        } catch {
            throw ReportError.database(error)
        }
    }
}
