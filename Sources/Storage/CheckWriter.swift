import CrashPoints
import Foundation
import Postgres
public import Reconciliation

/// One checked grant, ready to be written.
public struct CheckRecord: Sendable {
    public var grant: Grant
    public var decision: Decision
    /// The store's statement, when the store answered verifiably.
    public var facts: StoreStatement?
    /// How many ledger entries of the transaction the decision was made on (nil: not known). An entry is
    /// written only if the ledger still has that many, so two runs deciding at once (a narrowed rerun beside
    /// the monthly run) can never both take units back for one refund.
    public var ledgerEntriesSeen: Int?

    /// Text that came from a store (an error message in the detail, a revocation type in a review key) is
    /// stored with any NUL replaced by U+FFFD: PostgreSQL text cannot hold NUL, and one such byte would fail
    /// the whole batch on every resume.
    public init(grant: Grant, decision: Decision, facts: StoreStatement?, ledgerEntriesSeen: Int? = nil) {
        self.grant = grant
        self.ledgerEntriesSeen = ledgerEntriesSeen
        var decision = decision
        decision.detail = decision.detail.map(Self.storable)
        if var entry = decision.entry {
            entry.idempotencyKey = Self.storable(entry.idempotencyKey)
            entry.reason = entry.reason.map(Self.storable)
            decision.entry = entry
        }
        self.decision = decision
        self.facts = facts.map { facts in
            var copy = facts
            copy.environment = copy.environment.map { StoreEnvironment(rawValue: Self.storable($0.rawValue)) }
            copy.bundleID = copy.bundleID.map(Self.storable)
            copy.productID = copy.productID.map(Self.storable)
            copy.appAccountToken = copy.appAccountToken.map(Self.storable)
            if case .unknown(let text) = copy.refundKind { copy.refundKind = .unknown(Self.storable(text)) }
            copy.currency = copy.currency.map(Self.storable)
            copy.storefront = copy.storefront.map(Self.storable)
            return copy
        }
    }

    static func storable(_ text: String) -> String {
        text.utf8.contains(0) ? text.replacingOccurrences(of: "\u{0}", with: "\u{FFFD}") : text
    }
}

/// What writing a batch did.
public struct BatchOutcome: Sendable {
    /// Ledger entries created, to announce with NOTIFY (already sent on commit).
    public var newEntryIDs: [Int64]
    /// The records as written: decisions whose entry already existed now say so.
    public var records: [CheckRecord]
    /// Grants written in check pages (every one `no_refund_reported`, with no action).
    public var pagedGrants = 0
}

/// Writes a batch of checks and their ledger entries in one transaction, so that a crash can never leave
/// a check without its clawback or a clawback without its check. Entries insert with ON CONFLICT DO
/// NOTHING on their idempotency keys: a rerun, a resumed run or an overlapping shard writes nothing twice.
/// New entries are announced with `NOTIFY clawback, '<entry id>'`, which PostgreSQL delivers on commit.
public enum CheckWriter {
    static let checkColumns = [
        "run_id", "transaction_id", "original_transaction_id", "bundle_id", "environment", "player_id", "product_id", "quantity",
        "units_granted", "purchased_at", "verdict", "action", "units_clawed_back", "apple_environment", "revocation_date",
        "revocation_type", "revocation_reason", "revocation_percentage", "apple_price_milli", "apple_currency", "apple_storefront",
        "detail", "store", "revoked_quantity", "refunded_amount_milli", "order_id",
    ]

    static let ledgerColumns = [
        "transaction_id", "kind", "idempotency_key", "reverses_entry_id", "units", "run_id", "original_transaction_id", "bundle_id",
        "environment", "player_id", "product_id", "quantity", "units_granted", "price_milli", "currency", "purchased_at",
        "revocation_date", "revocation_type", "revocation_reason", "revocation_percentage", "reason", "store", "revoked_quantity",
        "refunded_amount_milli",
    ]

    /// Writes one batch in one transaction. With a `fence`, the transaction commits only while the run's
    /// scope lock is still held by the run (else `ScopeLockLost`, and nothing of the batch is written).
    ///
    /// `pages` hold the batch's `no_refund_reported` grants (`CheckPages`). A run that is resumed
    /// (`resumed`) may page a grant an earlier attempt left unverified: that check is deleted in the same
    /// transaction, so each grant has one check per run, in one table or the other.
    public static func write(
        _ batch: [CheckRecord], pages: [CheckPage] = [], runID: Int64, dryRun: Bool, resumed: Bool = false, counters: String,
        fence: LockFence? = nil, on connection: DatabaseConnection
    ) throws -> BatchOutcome {
        try connection.withTransaction { connection in
            var records = batch
            if !dryRun { try retryStale(&records, on: connection) }
            let newEntries = dryRun ? [] : try insertEntries(&records, runID: runID, on: connection)
            try writeChecks(records, runID: runID, on: connection)
            try writePages(pages, runID: runID, replacingUnverified: resumed, on: connection)
            try RunStore.heartbeat(runID, counters: counters, on: connection)
            if let fence, try !connection.holds(fence) { throw ScopeLockLost(runID: runID) }
            CrashPoint.reached("batch.before-commit")
            return BatchOutcome(newEntryIDs: newEntries, records: records, pagedGrants: pages.reduce(0) { $0 + $1.transactionIDs.count })
        }
    }

    /// One row per page. Each column of the grants travels as one array parameter (a page holds up to a few
    /// thousand grants; the statement is one round trip). A resumed run first deletes the unverified checks
    /// its pages take over, and refuses the batch if any grant of a page still has a check in the run: a
    /// grant has one check per run, in one table or the other.
    static func writePages(_ pages: [CheckPage], runID: Int64, replacingUnverified: Bool, on connection: DatabaseConnection) throws {
        for page in pages where !page.transactionIDs.isEmpty {
            if replacingUnverified {
                try connection.execute(
                    """
                    DELETE FROM clawback.checks
                    WHERE run_id = \(runID) AND transaction_id = ANY(\(page.transactionIDs)::text[]) AND verdict = 'unverified'
                    """)
                let checked = try connection.query(
                    """
                    SELECT transaction_id FROM clawback.checks
                    WHERE run_id = \(runID) AND transaction_id = ANY(\(page.transactionIDs)::text[]) LIMIT 1
                    """
                ).first
                if let checked {
                    throw PostgresError(
                        .server, operation: "check pages",
                        message: "run \(runID) already has a check of transaction \(try checked.decode(String.self, at: 0)); not paged again")
                }
            }
            try connection.execute(
                """
                INSERT INTO clawback.check_pages
                    (run_id, bundle_id, environment, verdict, detail, transaction_ids, purchased_ats, player_ids, product_ids,
                     units_granted, first_purchased_at, last_purchased_at, grants)
                VALUES (\(runID), \(page.bundleID), \(page.environment), 'no_refund_reported', \(page.detail),
                        \(page.transactionIDs)::text[], \(page.purchasedAts.map(\.postgresText))::text[]::timestamptz[],
                        \(page.playerIDs)::text[], \(page.productIDs)::text[], \(page.unitsGranted.map(\.postgresText))::text[]::bigint[],
                        \(page.firstPurchasedAt), \(page.lastPurchasedAt), \(page.transactionIDs.count))
                """)
        }
    }

    /// Decisions made on a ledger that has changed since (another run wrote to it meanwhile) are not written:
    /// they become unverified, retried by the next run on the ledger as it is then. Writers of entries take
    /// turns on one transaction-scoped lock, so each sees what the one before it committed.
    static func retryStale(_ records: inout [CheckRecord], on connection: DatabaseConnection) throws {
        let writing = records.indices.filter { records[$0].decision.entry != nil && records[$0].ledgerEntriesSeen != nil }
        guard !writing.isEmpty else { return }
        try connection.query("SELECT pg_advisory_xact_lock(\(ledgerWriterLock.0), \(ledgerWriterLock.1))")
        let ids = writing.map { records[$0].grant.transactionID }
        var counts: [String: Int] = [:]
        for row in try connection.query(
            "SELECT transaction_id, count(*) FROM clawback.ledger WHERE transaction_id = ANY(\(ids)::text[]) GROUP BY transaction_id"
        ).rows {
            counts[try row.decode(String.self, at: 0)] = try row.decode(Int.self, at: 1)
        }
        for index in writing where counts[records[index].grant.transactionID, default: 0] != records[index].ledgerEntriesSeen {
            let decision = records[index].decision
            records[index].decision = Decision(
                verdict: .unverified, action: .retryNextRun, units: decision.units,
                detail: "the ledger of this transaction changed while this run decided (another run wrote to it): "
                    + "decided again by the next run; this run's view was: \(decision.verdict.rawValue), \(decision.detail ?? "")")
        }
    }

    /// The ledger writers' turn: a lock class of its own (record_grant's locks are (1129070935, hash of the id)).
    static let ledgerWriterLock: (Int32, Int32) = (1_129_070_936, 0)

    /// The batch's ledger entries in one statement: COPY into a staging table, then one INSERT with ON
    /// CONFLICT DO NOTHING (an entry with the same key, or a second reversal of the same entry, is skipped)
    /// that notifies each new entry. Records whose entry already existed are marked `alreadyRecorded`.
    /// Returns the new entries' ids, in batch order.
    static func insertEntries(_ records: inout [CheckRecord], runID: Int64, on connection: DatabaseConnection) throws -> [Int64] {
        let drafts = records.indices.compactMap { index in records[index].decision.entry.map { (index, $0) } }
        guard !drafts.isEmpty else { return [] }
        let columns = ledgerColumns.joined(separator: ", ")
        try connection.executeScript(
            unsafeSQL: """
                CREATE TEMP TABLE IF NOT EXISTS ledger_batch ON COMMIT DELETE ROWS AS
                    SELECT 0 AS ordinal, \(columns) FROM clawback.ledger WITH NO DATA;
                """)
        try connection.copyIn(table: "ledger_batch", columns: ["ordinal"] + ledgerColumns) { writer in
            for (ordinal, (index, entry)) in drafts.enumerated() {
                let grant = records[index].grant
                let facts = records[index].facts
                try writer.appendRow([
                    ordinal, grant.transactionID, entry.kind.rawValue, entry.idempotencyKey, entry.reversesEntryID, entry.units, runID,
                    grant.originalTransactionID, grant.bundleID, grant.environment.rawValue, grant.playerID, grant.productID, grant.quantity,
                    grant.unitsGranted, grant.priceMilli, grant.currency, grant.purchasedAt, facts?.revocationDate, facts?.refundKind?.storedValue,
                    facts?.refundReason?.rawValue, facts?.revocationPercentage, entry.reason, grant.store.rawValue, facts?.revokedQuantity,
                    facts?.refundedAmountMilli,
                ])
            }
        }
        let inserted = try connection.query(
            """
            WITH inserted AS (
                INSERT INTO clawback.ledger (\(unescaped: columns))
                SELECT \(unescaped: columns) FROM ledger_batch ORDER BY ordinal
                ON CONFLICT DO NOTHING
                RETURNING entry_id, transaction_id, idempotency_key
            )
            SELECT entry_id, transaction_id, idempotency_key, pg_notify('clawback', entry_id::text) FROM inserted ORDER BY entry_id
            """)
        var created: [String: Int64] = [:]
        for row in inserted.rows {
            created[try row.decode(String.self, at: 1) + "\u{0}" + row.decode(String.self, at: 2)] = try row.decode(Int64.self, at: 0)
        }
        var newEntries: [Int64] = []
        for (index, entry) in drafts {
            // The first draft with a key takes the new entry; a repeat of it in the same batch found it there.
            if let entryID = created.removeValue(forKey: records[index].grant.transactionID + "\u{0}" + entry.idempotencyKey) {
                newEntries.append(entryID)
            } else {
                records[index].decision = records[index].decision.alreadyRecorded()
            }
        }
        return newEntries
    }

    /// COPY into a session-local staging table, then one upsert: a check is replaced only when it was
    /// unverified (a resumed run re-asking), never otherwise.
    static func writeChecks(_ records: [CheckRecord], runID: Int64, on connection: DatabaseConnection) throws {
        try connection.executeScript(
            unsafeSQL: """
                CREATE TEMP TABLE IF NOT EXISTS checks_batch (LIKE clawback.checks INCLUDING DEFAULTS) ON COMMIT DELETE ROWS;
                """)
        try connection.copyIn(table: "checks_batch", columns: checkColumns) { writer in
            for record in records {
                let grant = record.grant
                let facts = record.facts
                try writer.appendRow([
                    runID, grant.transactionID, grant.originalTransactionID, grant.bundleID, grant.environment.rawValue, grant.playerID,
                    grant.productID, grant.quantity, grant.unitsGranted, grant.purchasedAt, record.decision.verdict.rawValue,
                    record.decision.action.rawValue, record.decision.units, facts?.environment?.rawValue, facts?.revocationDate,
                    facts?.refundKind?.storedValue, facts?.refundReason?.rawValue, facts?.revocationPercentage, facts?.priceMilli, facts?.currency,
                    facts?.storefront, record.decision.detail, grant.store.rawValue, facts?.revokedQuantity,
                    facts?.refundedAmountMilli, grant.orderID,
                ])
            }
        }
        let columns = checkColumns.joined(separator: ", ")
        let updates = checkColumns.dropFirst(2).map { "\($0) = EXCLUDED.\($0)" }.joined(separator: ", ")
        try connection.execute(
            """
            INSERT INTO clawback.checks (\(unescaped: columns)) SELECT \(unescaped: columns) FROM checks_batch
            ON CONFLICT (run_id, transaction_id) DO UPDATE SET \(unescaped: updates), checked_at = now()
            WHERE clawback.checks.verdict = 'unverified'
            """)
    }
}

/// The run's scope lock was lost (its connection gone) before a batch could commit: the batch was rolled
/// back, and the run must stop without touching its row, which another run may now hold.
public struct ScopeLockLost: Error, Sendable, CustomStringConvertible {
    public let runID: Int64

    public init(runID: Int64) { self.runID = runID }
    public var description: String {
        "run \(runID) lost its scope lock (the lock's database connection ended): stopped without writing more; rerun to resume"
    }
}
