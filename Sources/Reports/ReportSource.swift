import Foundation
public import Postgres
public import Reconciliation

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
        let filter: PostgresQuery =
            switch scope {
            case .run(let id): "r.run_id = \(id)"
            case .window(let window): "r.window_start = \(window.start) AND r.window_end = \(window.end) AND NOT r.dry_run"
            }
        let rows: [PostgresRow]
        do throws(PostgresError) {
            rows = try connection.query(
                """
                SELECT r.run_id, r.window_start, r.window_end, r.shard_index, r.shard_count, r.strategy, r.dry_run, r.status, r.attempts,
                    r.bundle_ids, r.player_id, r.transaction_id,
                    coalesce((r.counters->>'grantsInScope')::bigint, 0), coalesce((r.counters->>'appleRequests')::bigint, 0),
                    coalesce((r.counters->>'appleRateLimited')::bigint, 0),
                    (SELECT count(*) FROM clawback.checks c WHERE c.run_id = r.run_id),
                    coalesce((r.counters->>'rejectedNotifications')::bigint, 0),
                    coalesce((r.counters->>'missedNotifications')::bigint, 0)
                FROM clawback.runs r WHERE \(fragment: filter) ORDER BY r.run_id
                """
            ).rows
        } catch {
            throw ReportError.database(error)
        }
        return try rows.map { row throws(ReportError) in
            do throws(PostgresError) {
                var narrowed: [String] = []
                let bundles = try row.decode([String].self, at: 9)
                if !bundles.isEmpty { narrowed.append("bundle " + bundles.joined(separator: ", ")) }
                if let player = try row.decode(String?.self, at: 10) { narrowed.append("player " + player) }
                if let transaction = try row.decode(String?.self, at: 11) { narrowed.append("transaction " + transaction) }
                return ReportRun(
                    runID: try row.decode(Int64.self, at: 0), windowStart: try row.decode(Date.self, at: 1),
                    windowEnd: try row.decode(Date.self, at: 2), shardIndex: try row.decode(Int.self, at: 3),
                    shardCount: try row.decode(Int.self, at: 4), strategy: try row.decode(String.self, at: 5),
                    dryRun: try row.decode(Bool.self, at: 6), status: try row.decode(String.self, at: 7),
                    attempts: try row.decode(Int.self, at: 8), narrowedTo: narrowed.isEmpty ? nil : narrowed.joined(separator: ", "),
                    grantsInScope: try row.decode(Int.self, at: 12), appleRequests: try row.decode(Int.self, at: 13),
                    appleRateLimited: try row.decode(Int.self, at: 14), rejectedNotifications: try row.decode(Int.self, at: 16),
                    missedNotifications: try row.decode(Int.self, at: 17), checks: try row.decode(Int.self, at: 15))
            } catch {
                throw ReportError.database(error)
            }
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

    /// Streams the flagged purchases (verdict other than ok) in purchase-date order, never all in memory.
    public static func flagged(
        _ runIDs: [Int64], on connection: PostgresConnection, _ body: (FlaggedPurchase) throws(ReportError) -> Void
    ) throws(ReportError) {
        let query: PostgresQuery = """
            WITH latest AS (\(fragment: latestChecks(runIDs)))
            SELECT run_id, bundle_id, environment, transaction_id, original_transaction_id, player_id, product_id, quantity,
                units_granted, units_clawed_back,
                coalesce((SELECT sum(e.units) FROM clawback.ledger e
                          WHERE e.transaction_id = l.transaction_id AND e.run_id = \(fragment: anyOf(runIDs))), 0),
                verdict, action, revocation_date, revocation_type, revocation_reason, revocation_percentage, purchased_at,
                apple_price_milli, apple_currency, apple_storefront, detail
            FROM latest l WHERE verdict <> 'ok'
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
                appleStorefront: try row.decode(String?.self, at: 20), detail: try row.decode(String?.self, at: 21))
        } catch {
            throw ReportError.database(error)
        }
    }
}
