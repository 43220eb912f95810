import Foundation
import Locking
import Postgres
import Storage

/// B7: `consumerCount` game servers, each on its own thread and connection, drain `entryCount` ledger
/// entries the way docs/integrating.md's worked consumer does: a transaction per claim of 100, one
/// acknowledge_clawback call per entry. One entry in ten is a second take-back of the transaction before
/// it (an adjustment), which the claim hands out only once the first is acknowledged. Measured: from the
/// first claim to the last acknowledgement. Fails unless every entry is acknowledged exactly once.
func benchmarkLedgerConsumers(entryCount: Int, consumerCount: Int, batch: Int, oneStatement: Bool) throws {
    let connection = try benchConnection()
    try Migrator().migrate(on: DatabaseConnection(connection))
    try connection.execute(
        """
        WITH run AS (
            INSERT INTO clawback.runs (scope_key, window_start, window_end, strategy, triggered_by, host)
            VALUES ('bench-ledger', now() - interval '3 months', now(), 'transaction-info', 'clawback-db-bench', 'localhost')
            RETURNING run_id)
        INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, units, run_id, original_transaction_id, bundle_id,
            environment, player_id, product_id, quantity, units_granted, purchased_at)
        SELECT 'bench-' || (i - CASE WHEN i % 10 = 0 THEN 1 ELSE 0 END), CASE WHEN i % 10 = 0 THEN 'adjustment' ELSE 'clawback' END,
            'bench:' || i, CASE WHEN i % 10 = 0 THEN 100 ELSE 600 END, run.run_id, 'bench-' || i, 'com.bench.game', 'Production',
            'player-' || (i % 5000), 'gems_600', 1, 600, now() - interval '10 days'
        FROM run, generate_series(1, \(entryCount)) AS i
        ORDER BY i
        """)
    try connection.execute("ANALYZE clawback.ledger")

    let failures = Locked<[String]>([])
    let acknowledged = Locked<Int>(0)
    let done = DispatchGroup()
    let start = ContinuousClock.now
    for index in 0..<consumerCount {
        done.enter()
        let thread = Thread {
            defer { done.leave() }
            do {
                let count = try drain(as: "bench-game-\(index)", batch: batch, oneStatement: oneStatement)
                acknowledged.withLock { $0 += count }
            } catch {
                failures.withLock { $0.append("consumer \(index): \(error)") }
            }
        }
        thread.start()
    }
    done.wait()
    let wall = seconds(since: start)
    if let failure = failures.withLock({ $0.first }) { throw BenchFailure(failure) }

    let row = try connection.query(
        """
        SELECT (SELECT count(*) FROM clawback.ledger_acknowledgements), (SELECT count(*) FROM clawback.ledger),
            (SELECT count(DISTINCT acknowledged_by) FROM clawback.ledger_acknowledgements)
        """
    ).first
    let acknowledgements = try row?.decode(Int.self, at: 0) ?? 0
    let entries = try row?.decode(Int.self, at: 1) ?? 0
    try printJSON([
        "entries": entries, "consumers": consumerCount, "batch": batch, "one_statement": oneStatement, "seconds": wall,
        "entries_per_second": Double(entries) / wall,
        "consumers_that_acknowledged": try row?.decode(Int.self, at: 2) ?? 0,
    ])
    let counted = acknowledged.withLock { $0 }
    guard acknowledgements == entryCount, entries == entryCount, counted == entryCount else {
        throw BenchFailure("\(entries) entries, \(acknowledgements) acknowledgements, \(counted) acknowledged by the consumers")
    }
}

/// One game server: claims and acknowledges until nothing is left to apply. Returns how many it acknowledged.
private func drain(as consumer: String, batch: Int, oneStatement: Bool) throws -> Int {
    let connection = try benchConnection()
    defer { connection.close() }
    var acknowledged = 0
    while true {
        let handed = try connection.withTransaction { connection in
            let claimed = try connection.query("SELECT entry_id FROM clawback.claim_clawbacks(\(consumer), \(batch), interval '1 minute')").rows
            let entries = try claimed.map { try $0.decode(Int64.self, at: 0) }
            if oneStatement, !entries.isEmpty {
                // Each entry acknowledged on its own, all in one statement (one round trip per claim).
                let recorded = try connection.query(
                    """
                    SELECT count(*) FILTER (WHERE clawback.acknowledge_clawback(id, \(consumer), 'applied'))
                    FROM unnest(\(entries.map(String.init))::text[]::bigint[]) AS id
                    """
                ).first?.decode(Int.self, at: 0)
                guard recorded == entries.count else { throw BenchFailure("\(consumer): \(recorded ?? 0) of \(entries.count) recorded") }
                return entries.count
            }
            for entry in entries {
                guard
                    try connection.query("SELECT clawback.acknowledge_clawback(\(entry), \(consumer), 'applied')").first?.decode(Bool.self, at: 0)
                        == true
                else { throw BenchFailure("entry \(entry) was acknowledged before") }
            }
            return entries.count
        }
        acknowledged += handed
        if handed > 0 { continue }
        // Nothing for this consumer now: others may still hold the entries before the last ones in line.
        let left =
            try connection.query(
                """
                SELECT count(*) FROM clawback.ledger l
                WHERE NOT EXISTS (SELECT 1 FROM clawback.ledger_acknowledgements a WHERE a.entry_id = l.entry_id)
                """
            ).first?.decode(Int.self, at: 0) ?? 0
        if left == 0 { return acknowledged }
        Thread.sleep(forTimeInterval: 0.005)
    }
}
