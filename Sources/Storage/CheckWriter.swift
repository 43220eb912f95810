import CrashPoints
import Foundation
public import Postgres
public import Reconciliation

/// One checked grant, ready to be written.
public struct CheckRecord: Sendable {
    public var grant: Grant
    public var decision: Decision
    /// Apple's facts, when Apple answered verifiably.
    public var facts: AppleFacts?

    public init(grant: Grant, decision: Decision, facts: AppleFacts?) {
        self.grant = grant
        self.decision = decision
        self.facts = facts
    }
}

/// What writing a batch did.
public struct BatchOutcome: Sendable {
    /// Ledger entries created, to announce with NOTIFY (already sent on commit).
    public var newEntryIDs: [Int64]
    /// The records as written: decisions whose entry already existed now say so.
    public var records: [CheckRecord]
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
        "detail",
    ]

    public static func write(
        _ batch: [CheckRecord], runID: Int64, dryRun: Bool, counters: String, on connection: PostgresConnection
    ) throws -> BatchOutcome {
        try connection.withTransaction { connection in
            var records = batch
            var newEntries: [Int64] = []
            if !dryRun {
                for index in records.indices {
                    guard let entry = records[index].decision.entry else { continue }
                    if let entryID = try insert(entry, for: records[index], runID: runID, on: connection) {
                        newEntries.append(entryID)
                        try connection.query("SELECT pg_notify('clawback', \(String(entryID)))")
                    } else {
                        records[index].decision = records[index].decision.alreadyRecorded()
                    }
                }
            }
            try writeChecks(records, runID: runID, on: connection)
            try RunStore.heartbeat(runID, counters: counters, on: connection)
            CrashPoint.reached("batch.before-commit")
            return BatchOutcome(newEntryIDs: newEntries, records: records)
        }
    }

    /// The new entry's id, or nil when an entry with the same key (or a reversal of the same entry) exists.
    static func insert(_ entry: LedgerEntryDraft, for record: CheckRecord, runID: Int64, on connection: PostgresConnection) throws -> Int64? {
        let grant = record.grant
        let facts = record.facts
        return try connection.query(
            """
            INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, reverses_entry_id, units, run_id,
                original_transaction_id, bundle_id, environment, player_id, product_id, quantity, units_granted, price_milli,
                currency, purchased_at, revocation_date, revocation_type, revocation_reason, revocation_percentage, reason)
            VALUES (\(grant.transactionID), \(entry.kind.rawValue), \(entry.idempotencyKey), \(entry.reversesEntryID), \(entry.units),
                \(runID), \(grant.originalTransactionID), \(grant.bundleID), \(grant.environment), \(grant.playerID), \(grant.productID),
                \(grant.quantity), \(grant.unitsGranted), \(grant.priceMilli), \(grant.currency), \(grant.purchasedAt),
                \(facts?.revocationDate), \(facts?.revocationType), \(facts?.revocationReason), \(facts?.revocationPercentage),
                \(entry.reason))
            ON CONFLICT DO NOTHING
            RETURNING entry_id
            """
        ).first?.decode(Int64.self, at: 0)
    }

    /// COPY into a session-local staging table, then one upsert: a check is replaced only when it was
    /// unverified (a resumed run re-asking), never otherwise.
    static func writeChecks(_ records: [CheckRecord], runID: Int64, on connection: PostgresConnection) throws {
        try connection.executeScript(unsafeSQL: """
            CREATE TEMP TABLE IF NOT EXISTS checks_batch (LIKE clawback.checks INCLUDING DEFAULTS) ON COMMIT DELETE ROWS;
            """)
        try connection.copyIn(table: "checks_batch", columns: checkColumns) { writer in
            for record in records {
                let grant = record.grant
                let facts = record.facts
                try writer.appendRow([
                    runID, grant.transactionID, grant.originalTransactionID, grant.bundleID, grant.environment, grant.playerID,
                    grant.productID, grant.quantity, grant.unitsGranted, grant.purchasedAt, record.decision.verdict.rawValue,
                    record.decision.action.rawValue, record.decision.units, facts?.environment, facts?.revocationDate,
                    facts?.revocationType, facts?.revocationReason, facts?.revocationPercentage, facts?.priceMilli, facts?.currency,
                    facts?.storefront, record.decision.detail,
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
