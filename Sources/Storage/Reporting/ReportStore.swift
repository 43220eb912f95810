public import Foundation
import Postgres
public import Reconciliation

/// The reads behind finance's reports, over one connection: the runs a report covers, the verdicts of the
/// purchases they checked, the flagged purchases streamed with their ledger positions, and the refund
/// requests of the window. Every query orders its rows fully, so the same data always gives the same
/// bytes; wide rows are decoded by column name, so a column added to a query cannot shift the others.
public struct ReportStore {
    /// A read that failed: the database (its `DatabaseError` says whether a retry may help), or a stored
    /// value a report cannot represent (a bug, or a hand-edited row).
    public enum Failure: Error, Sendable, CustomStringConvertible {
        case database(DatabaseError)
        case badData(String)

        /// A failed read as a report's failure: the database's, or a value a report cannot represent.
        static func reading(_ error: any Error) -> Failure { DatabaseError(error).map { .database($0) } ?? .badData("\(error)") }

        public var description: String {
            switch self {
            case .database(let error): "\(error)"
            case .badData(let what): what
            }
        }
    }

    let connection: DatabaseConnection

    public init(_ connection: DatabaseConnection) { self.connection = connection }

    /// A read of a store's own rows for its part of the report (`StoreReportTable`), through the store's own
    /// named reads in this module; its failure is the report's.
    public func reading<T>(_ body: (DatabaseConnection) throws -> T) throws(Failure) -> T {
        do {
            return try body(connection)
        } catch {
            throw .reading(error)
        }
    }

    /// The runs of `scope`, oldest first, with the counters of their last attempt.
    public func runs(_ scope: ReportScope) throws(Failure) -> [ReportRun] {
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
                    shardCount: run.shardCount, strategy: run.strategy, dryRun: run.dryRun, status: run.status,
                    attempts: run.attempts, narrowedTo: narrowed.isEmpty ? nil : narrowed.joined(separator: ", "),
                    grantsInScope: counters.grantsInScope, storeRequests: counters.storeRequests,
                    storeRateLimited: counters.storeRateLimited, voidsNotCovered: counters.voidsNotCovered,
                    rejectedNotifications: counters.rejectedNotifications,
                    missedNotifications: counters.missedNotifications, checks: covered.checks)
            }
        } catch let error as PostgresError {
            throw .reading(error)
        } catch {
            throw .badData("\(error)")
        }
    }

    /// Analyzes what the runs wrote (checks, check pages, the ledger, the game's acknowledgements) where
    /// autovacuum has not yet: a run writes its report right after its last batch, and planned with the
    /// statistics of an empty ledger, the detail report's lookup of each flagged purchase's entries scanned
    /// the run's every entry per purchase (100,000 refunds: hours, where it takes seconds). Returns the
    /// tables analyzed.
    @discardableResult
    public func refreshStaleStatistics() throws(Failure) -> [String] {
        do {
            return try StaleStatistics.refresh(tablesMatching: "^(checks|check_pages|ledger|ledger_acknowledgements)$", on: connection)
        } catch {
            throw .reading(error)
        }
    }

    /// `ANY($n)` over the run ids, bound as one array parameter.
    static func anyOf(_ runIDs: [Int64]) -> PostgresQuery {
        "ANY(\(runIDs.map(String.init))::text[]::bigint[])"
    }

    /// The check of each transaction that a report over several runs stands on: the latest (a later rerun
    /// supersedes an earlier answer), except that a `no_refund_reported` check (a feed's silence, weaker than
    /// any answer about the purchase itself) never takes the place of a definite verdict an earlier run gave
    /// (an `unknown_to_apple` or `mismatch` under review, a refund): then the latest other check stands. Ties
    /// within a run (which the job never writes) go to the checks table's row. Over every check of the runs,
    /// pages unnested.
    static func reportedChecks(_ runIDs: [Int64]) -> PostgresQuery {
        """
        SELECT DISTINCT ON (transaction_id) run_id, transaction_id, verdict, in_page FROM (
            SELECT run_id, transaction_id, verdict, in_page,
                   verdict = 'no_refund_reported'
                       AND bool_or(verdict NOT IN ('no_refund_reported', 'unverified')) OVER (PARTITION BY transaction_id) AS yields
            FROM clawback.run_checks WHERE run_id = \(fragment: anyOf(runIDs))
        ) candidates
        ORDER BY transaction_id, yields, run_id DESC, in_page
        """
    }

    /// The reported check of each transaction among `runIDs` (`reportedChecks`) that is a row of the checks
    /// table: every check but the `no_refund_reported` ones a run kept in pages. One run has one check per
    /// grant: no search for the latest.
    static func latestChecks(_ runIDs: [Int64]) -> PostgresQuery {
        if runIDs.count == 1, let runID = runIDs.first { return "SELECT * FROM clawback.checks WHERE run_id = \(runID)" }
        return """
            SELECT c.* FROM (\(fragment: reportedChecks(runIDs))) reported
            JOIN clawback.checks c USING (run_id, transaction_id)
            WHERE NOT reported.in_page
            """
    }

    /// Verdicts of every purchase the runs checked, one per transaction (checks and check pages alike).
    public func verdictCounts(_ runIDs: [Int64]) throws(Failure) -> [Verdict: Int] {
        do {
            // One run: its own counts, without unnesting its pages.
            if runIDs.count == 1, let runID = runIDs.first { return try RunStore.verdictCounts(runID, on: connection) }
            var counts: [Verdict: Int] = [:]
            for row in try connection.query(
                "SELECT verdict, count(*) AS checks FROM (\(fragment: Self.reportedChecks(runIDs))) reported GROUP BY verdict"
            ).rows {
                counts[try row.decode(Verdict.self, column: "verdict")] = try row.decode(Int.self, column: "checks")
            }
            return counts
        } catch {
            throw .reading(error)
        }
    }

    public func ledgerEntryCount(_ runIDs: [Int64]) throws(Failure) -> Int {
        do {
            return try connection.query(
                "SELECT count(*) FROM clawback.ledger WHERE run_id = \(fragment: Self.anyOf(runIDs))"
            ).first?.decode(Int.self, at: 0) ?? 0
        } catch {
            throw .reading(error)
        }
    }

    /// Streams the flagged purchases (a verdict other than ok and no_refund_reported) in purchase-date order, never all in memory, each
    /// with its ledger position: the latest take-back or give-back these runs wrote for it, and the game's
    /// acknowledgement of it as recorded by `asOf` (a later acknowledgement reads as still pending). An error
    /// `body` throws ends the stream and is rethrown as it is.
    public func flagged(_ runIDs: [Int64], asOf: Date, _ body: (FlaggedPurchase) throws -> Void) throws {
        let query: PostgresQuery = """
            WITH latest AS (\(fragment: Self.latestChecks(runIDs)))
            SELECT run_id, bundle_id, environment, transaction_id, original_transaction_id, player_id, product_id, quantity,
                units_granted, units_clawed_back,
                coalesce((SELECT sum(e.units) FROM clawback.ledger e
                          WHERE e.transaction_id = l.transaction_id AND e.run_id = \(fragment: Self.anyOf(runIDs))), 0) AS units_change,

                verdict,
                -- What the report's runs did: a check that found its entries already written says what the first
                -- entry the report's runs wrote for the purchase stands for (a daily run's clawback, then perhaps
                -- its adjustment), so that the window's report reads the same however many of its runs took part.
                CASE WHEN l.action = 'already_recorded' THEN coalesce((
                    SELECT CASE f.kind WHEN 'clawback' THEN 'clawback_created' WHEN 'adjustment' THEN 'adjustment_created'
                                       WHEN 'reversal' THEN 'reversal_created' ELSE 'flagged_for_review' END
                    FROM clawback.ledger f
                    WHERE f.transaction_id = l.transaction_id AND f.run_id = \(fragment: Self.anyOf(runIDs)) AND f.created_at <= \(asOf)
                    ORDER BY f.entry_id LIMIT 1), l.action) ELSE l.action END AS action,
                revocation_date, revocation_type, revocation_reason, revocation_percentage, purchased_at,
                apple_price_milli, apple_currency, apple_storefront, detail, store::text AS store, revoked_quantity, refunded_amount_milli,
                -- Checks written before migration 0019 carry no order id: their grant's, while it is kept.
                coalesce(l.order_id, (SELECT g.order_id FROM clawback.grants g
                                      WHERE g.transaction_id = l.transaction_id AND g.purchased_at = l.purchased_at)) AS order_id,
                p.entry_id AS position_entry_id, p.units AS position_units, p.created_at AS position_created_at,
                p.outcome AS position_outcome, p.units_applied AS position_units_applied, p.acknowledged_at AS position_acknowledged_at
            FROM latest l
            LEFT JOIN LATERAL (
                SELECT e.entry_id, e.units, e.created_at, a.outcome, a.units_applied, a.acknowledged_at
                FROM clawback.ledger e
                LEFT JOIN clawback.ledger_acknowledgements a ON a.entry_id = e.entry_id AND a.acknowledged_at <= \(asOf)
                WHERE e.transaction_id = l.transaction_id AND e.run_id = \(fragment: Self.anyOf(runIDs)) AND e.kind <> 'review'
                  AND e.created_at <= \(asOf)
                ORDER BY e.entry_id DESC LIMIT 1
            ) p ON true
            WHERE verdict NOT IN ('ok', 'no_refund_reported')
            ORDER BY purchased_at, transaction_id
            """
        try stream(query, decode: Self.purchase, body)
    }

    /// Streams `query`'s rows, each decoded and handed to `body`: a decoding failure is the database's, a
    /// failure of `body` comes back as it is.
    func stream<Row>(_ query: PostgresQuery, decode: (PostgresRow) throws(PostgresError) -> Row, _ body: (Row) throws -> Void) throws {
        var failure: (any Error)?
        do {
            try connection.stream(query, chunkSize: 500) { rows in
                for row in rows {
                    let decoded: Row
                    do {
                        decoded = try decode(row)
                    } catch {
                        failure = Failure.reading(error)
                        throw error
                    }
                    do {
                        try body(decoded)
                    } catch {
                        failure = error
                        throw error
                    }
                }
            }
        } catch let error as PostgresError {
            throw failure ?? Failure.database(DatabaseError(error))
        } catch {
            throw failure ?? Failure.badData("\(error)")
        }
    }

    static func purchase(_ row: PostgresRow) throws(PostgresError) -> FlaggedPurchase {
        FlaggedPurchase(
            runID: try row.decode(Int64.self, column: "run_id"), bundleID: try row.decode(String.self, column: "bundle_id"),
            environment: try row.decode(String.self, column: "environment"), transactionID: try row.decode(String.self, column: "transaction_id"),
            originalTransactionID: try row.decode(String.self, column: "original_transaction_id"),
            playerID: try row.decode(String.self, column: "player_id"), productID: try row.decode(String.self, column: "product_id"),
            quantity: try row.decode(Int.self, column: "quantity"), unitsGranted: try row.decode(Int64.self, column: "units_granted"),
            unitsClawedBack: try row.decode(Int64.self, column: "units_clawed_back"),
            unitsChange: try row.decode(Int64.self, column: "units_change"), verdict: try row.decode(Verdict.self, column: "verdict"),
            action: try row.decode(CheckAction.self, column: "action"), revocationDate: try row.decode(Date?.self, column: "revocation_date"),
            revocationType: try row.decode(String?.self, column: "revocation_type"),
            revocationReason: try row.decode(Int?.self, column: "revocation_reason"),
            revocationPercentage: try row.decode(Int?.self, column: "revocation_percentage"),
            purchasedAt: try row.decode(Date.self, column: "purchased_at"), storePriceMilli: try row.decode(Int64?.self, column: "apple_price_milli"),
            storeCurrency: try row.decode(String?.self, column: "apple_currency"),
            storefront: try row.decode(String?.self, column: "apple_storefront"), detail: try row.decode(String?.self, column: "detail"),
            position: try position(row), store: try store(row),
            revokedQuantity: try row.decode(Int?.self, column: "revoked_quantity"),
            storeRefundedAmountMilli: try row.decode(Int64?.self, column: "refunded_amount_milli"),
            orderID: try row.decode(String?.self, column: "order_id"))
    }

    static func store(_ row: PostgresRow) throws(PostgresError) -> Store { try row.decode(Store.self, column: "store") }

    /// What the report's runs moved in the ledger, per purchase, gross: the units of their entries above 0
    /// and below 0, with the price and currency of the purchase's latest check of those runs (to value them).
    /// Read from the ledger itself, not from the flagged purchases: a purchase whose refund was reversed and
    /// then checked again (`ok`) is flagged no more, but what these runs took and gave back stays.
    public func movements(_ runIDs: [Int64], _ body: (PurchaseMovement) throws -> Void) throws {
        let query: PostgresQuery = """
            SELECT e.transaction_id, max(e.units_granted) AS units_granted,
                   coalesce(sum(e.units) FILTER (WHERE e.units > 0), 0)::bigint AS taken,
                   coalesce(-sum(e.units) FILTER (WHERE e.units < 0), 0)::bigint AS given,
                   (SELECT c.apple_price_milli FROM clawback.checks c WHERE c.transaction_id = e.transaction_id
                      AND c.run_id = \(fragment: Self.anyOf(runIDs)) ORDER BY c.run_id DESC LIMIT 1) AS price_milli,
                   (SELECT c.apple_currency FROM clawback.checks c WHERE c.transaction_id = e.transaction_id
                      AND c.run_id = \(fragment: Self.anyOf(runIDs)) ORDER BY c.run_id DESC LIMIT 1) AS currency
            FROM clawback.ledger e
            WHERE e.run_id = \(fragment: Self.anyOf(runIDs)) AND e.units <> 0
            GROUP BY e.transaction_id
            """
        try stream(query, decode: Self.movement, body)
    }

    static func movement(_ row: PostgresRow) throws(PostgresError) -> PurchaseMovement {
        PurchaseMovement(
            transactionID: try row.decode(String.self, column: "transaction_id"), unitsGranted: try row.decode(Int64.self, column: "units_granted"),
            taken: try row.decode(Int64.self, column: "taken"), given: try row.decode(Int64.self, column: "given"),
            priceMilli: try row.decode(Int64?.self, column: "price_milli"), currency: try row.decode(String?.self, column: "currency"))
    }

    /// The ledger position, absent when these runs wrote no take-back or give-back for the purchase.
    static func position(_ row: PostgresRow) throws(PostgresError) -> LedgerPosition? {
        guard let entryID = try row.decode(Int64?.self, column: "position_entry_id") else { return nil }
        return LedgerPosition(
            entryID: entryID, units: try row.decode(Int64.self, column: "position_units"),
            createdAt: try row.decode(Date.self, column: "position_created_at"),
            outcome: try row.decode(AcknowledgementOutcome?.self, column: "position_outcome"),
            unitsApplied: try row.decode(Int64?.self, column: "position_units_applied"),
            acknowledgedAt: try row.decode(Date?.self, column: "position_acknowledged_at"))
    }

    /// A moment as the database keeps it: RFC 3339 in UTC with microseconds, PostgreSQL's precision, so that
    /// a report's timestamps are exactly the stored ones.
    public static func timestamp(_ date: Date) -> String { PostgresTimestamp.format(date) }

    /// The database's clock: a report's default as-of time, so that it agrees with the acknowledgements'.
    public func databaseNow() throws(Failure) -> Date {
        let now: Date?
        do {
            now = try connection.query("SELECT clock_timestamp()").first?.decode(Date.self, at: 0)
        } catch {
            throw .reading(error)
        }
        guard let now else { throw .badData("the database did not tell its time") }
        return now
    }

    /// The refund requests a report covers: those about purchases made within the report's window (the
    /// purchases the report's runs check), as recorded at the report's as-of time (answers and decisions
    /// recorded later are left out, so a report can be regenerated as it was).
    public func refundRequests(from start: Date, to end: Date, asOf: Date) throws(Failure) -> [RefundRequestLine] {
        do {
            return try connection.query(
                """
                SELECT notification_uuid::text AS notification_uuid, bundle_id, environment, transaction_id,
                    coalesce(product_id, '') AS product_id, reason, requested_at, deadline,
                    CASE WHEN settled_at > \(asOf) THEN CASE WHEN answer IS NULL THEN 'received' ELSE 'sending' END ELSE state END AS state,
                    CASE WHEN answered_at <= \(asOf) THEN answered_at END AS answered_at,
                    answer_delivery_status, answer_consumption_percentage, answer_refund_preference,
                    units_granted, units_consumed, apple_error_code, last_error,
                    CASE WHEN outcome_at <= \(asOf) THEN outcome END AS outcome, CASE WHEN outcome_at <= \(asOf) THEN outcome_at END AS outcome_at
                FROM clawback.refund_requests
                WHERE coalesce(purchased_at, requested_at) >= \(start) AND coalesce(purchased_at, requested_at) < \(end) AND received_at <= \(asOf)
                ORDER BY requested_at, notification_uuid
                """
            ).rows.map { row throws(PostgresError) in
                RefundRequestLine(
                    notificationUUID: try row.decode(String.self, column: "notification_uuid"),
                    bundleID: try row.decode(String.self, column: "bundle_id"), environment: try row.decode(String.self, column: "environment"),
                    transactionID: try row.decode(String.self, column: "transaction_id"),
                    productID: try row.decode(String.self, column: "product_id"),
                    reason: try row.decode(String?.self, column: "reason"), requestedAt: try row.decode(Date.self, column: "requested_at"),
                    deadline: try row.decode(Date.self, column: "deadline"), state: try row.decode(RefundRequestState.self, column: "state"),
                    answeredAt: try row.decode(Date?.self, column: "answered_at"),
                    deliveryStatus: try row.decode(String?.self, column: "answer_delivery_status"),
                    consumptionPercentage: try row.decode(Int64?.self, column: "answer_consumption_percentage"),
                    refundPreference: try row.decode(String?.self, column: "answer_refund_preference"),
                    unitsGranted: try row.decode(Int64?.self, column: "units_granted"),
                    unitsConsumed: try row.decode(Int64?.self, column: "units_consumed"),
                    appleErrorCode: try row.decode(Int64?.self, column: "apple_error_code"),
                    lastError: try row.decode(String?.self, column: "last_error"),
                    outcome: try row.decode(RefundDecision?.self, column: "outcome"), outcomeAt: try row.decode(Date?.self, column: "outcome_at"))
            }
        } catch {
            throw .reading(error)
        }
    }

    /// Google Play's chargeback reviews a report covers: those about purchases made within the report's
    /// window (by the order's date; by the notification's until the order was read), as recorded at the
    /// report's as-of time.
    public func chargebackReviews(from start: Date, to end: Date, asOf: Date) throws(Failure) -> [ChargebackReviewLine] {
        do {
            return try connection.query(
                """
                SELECT r.package_name, r.order_id, r.transaction_id, g.product_id, r.notified_at, r.deadline,
                    CASE WHEN r.settled_at <= \(asOf) THEN r.state WHEN r.stored_at <= \(asOf) THEN 'stored' ELSE 'open' END AS state,
                    CASE WHEN r.answered_at <= \(asOf) THEN r.answered_at END AS answered_at,
                    CASE WHEN r.stored_at <= \(asOf) THEN r.answer_preference END AS answer_preference,
                    CASE WHEN r.stored_at <= \(asOf) THEN r.answer_consumed_milliunits END AS answer_consumed_milliunits,
                    CASE WHEN r.stored_at <= \(asOf) THEN r.answer_usage_events END AS answer_usage_events,
                    CASE WHEN r.stored_at <= \(asOf) OR r.settled_at <= \(asOf) THEN r.units_granted END AS units_granted,
                    CASE WHEN r.stored_at <= \(asOf) OR r.settled_at <= \(asOf) THEN r.units_consumed END AS units_consumed,
                    CASE WHEN r.stored_at <= \(asOf) OR r.settled_at <= \(asOf) THEN r.reason END AS reason,
                    CASE WHEN r.settled_at <= \(asOf) THEN r.google_status END AS google_status,
                    CASE WHEN r.settled_at <= \(asOf) THEN r.last_error END AS last_error,
                    CASE WHEN r.outcome_read_at <= \(asOf) THEN r.outcome END AS outcome,
                    CASE WHEN r.outcome_read_at <= \(asOf) AND r.outcome IS NOT NULL THEN r.outcome_read_at END AS outcome_read_at,
                    CASE WHEN r.set_aside_at <= \(asOf) AND coalesce(r.stored_at > \(asOf), true) AND coalesce(r.settled_at > \(asOf), true)
                        THEN r.set_aside_reason END AS set_aside_reason
                FROM clawback.google_refund_reviews r
                LEFT JOIN LATERAL (
                    SELECT product_id FROM clawback.grants
                    WHERE transaction_id = r.transaction_id AND store = 'google_play' AND bundle_id = r.package_name LIMIT 1
                ) g ON true
                WHERE coalesce(r.purchased_at, r.notified_at) >= \(start) AND coalesce(r.purchased_at, r.notified_at) < \(end)
                  AND r.received_at <= \(asOf)
                ORDER BY r.notified_at, r.pending_refund_token
                """
            ).rows.map { row throws(PostgresError) in
                ChargebackReviewLine(
                    packageName: try row.decode(String.self, column: "package_name"), orderID: try row.decode(String.self, column: "order_id"),
                    transactionID: try row.decode(String?.self, column: "transaction_id"),
                    productID: try row.decode(String?.self, column: "product_id"),
                    notifiedAt: try row.decode(Date.self, column: "notified_at"), deadline: try row.decode(Date.self, column: "deadline"),
                    state: try row.decode(String.self, column: "state"), answeredAt: try row.decode(Date?.self, column: "answered_at"),
                    refundPreference: try row.decode(String?.self, column: "answer_preference"),
                    consumedMilliunits: try row.decode(Int64?.self, column: "answer_consumed_milliunits"),
                    usageEvents: try row.decode(Int64?.self, column: "answer_usage_events"),
                    unitsGranted: try row.decode(Int64?.self, column: "units_granted"),
                    unitsConsumed: try row.decode(Int64?.self, column: "units_consumed"), reason: try row.decode(String?.self, column: "reason"),
                    googleStatus: try row.decode(Int64?.self, column: "google_status"),
                    lastError: try row.decode(String?.self, column: "last_error"), outcome: try row.decode(String?.self, column: "outcome"),
                    outcomeReadAt: try row.decode(Date?.self, column: "outcome_read_at"),
                    setAsideReason: try row.decode(String?.self, column: "set_aside_reason"))
            }
        } catch {
            throw .reading(error)
        }
    }
}
