import Foundation
import Postgres
import Reconciliation
import Spawning
import Storage

/// B5: loads `grantCount` synthetic grants into the window (not measured), then measures the job's own read
/// path (pages of 1,000 in window order, each with its ledger histories) over all of them, and the job's
/// own write path (CheckWriter: checks plus clawback entries, 500 per transaction) for `entryCount` refunds.
func benchmarkDatabasePaths(grantCount: Int, entryCount: Int) throws {
    let connection = try benchConnection()
    try Migrator().migrate(on: DatabaseConnection(connection))
    let window = ReconciliationWindow.monthsBefore(Date(), months: 3)
    try connection.query("SELECT clawback.ensure_grant_partitions(\(window.start), \(window.end))")
    try connection.execute(
        """
        INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id,
            units_granted, purchased_at)
        SELECT (2000000000000000 + i)::text, (2000000000000000 + i)::text, 'com.bench.game', 'gems_600', 'Production',
            'player-' || (i % 50000), 600,
            \(window.start)::timestamptz + (\(window.end)::timestamptz - \(window.start)::timestamptz) * (i::float8 / \(grantCount)::float8)
        FROM generate_series(0, \(grantCount) - 1) AS i
        ON CONFLICT DO NOTHING
        """)
    try connection.execute("ANALYZE clawback.grants")

    let selection = GrantSelection(window: window)
    let run = try RunStore.create(
        RunScope(selection: selection, strategy: .transactionInfo, dryRun: false),
        origin: RunOrigin(triggeredBy: "clawback-db-bench", host: "localhost", arguments: []), on: DatabaseConnection(connection))

    // The read path, as CheckingPipeline does it.
    var kept: [Grant] = []
    kept.reserveCapacity(entryCount)
    var cursor: GrantCursor?
    var streamed = 0
    let backendPID = try connection.query("SELECT pg_backend_pid()").first?.decode(Int32.self, at: 0) ?? -1
    let cpuBefore = CPUSample.now(backendPID: backendPID)
    let readStart = ContinuousClock.now
    while true {
        let page = try GrantStore.page(selection, after: cursor, excludingCheckedBy: nil, limit: 1000, on: DatabaseConnection(connection))
        guard let next = page.next else { break }
        _ = try LedgerHistoryReader.histories(for: page.grants.map(\.transactionID), on: DatabaseConnection(connection))
        streamed += page.grants.count
        if kept.count < entryCount { kept += page.grants.prefix(entryCount - kept.count) }
        cursor = next
    }
    let readSeconds = seconds(since: readStart)
    let readCPU = CPUSample.now(backendPID: backendPID).figures(since: cpuBefore, rows: streamed, wall: readSeconds)

    // The write path: each kept grant fully refunded, so each batch writes checks and clawback entries.
    let records = kept.map { grant in
        let refund = StoreStatement(
            transactionID: grant.transactionID, environment: .production, bundleID: "com.bench.game", productID: "gems_600",
            quantity: 1, revocationDate: window.start, refundKind: .full, refundReason: .other, priceMilli: 4_990, currency: "USD")
        return CheckRecord(grant: grant, decision: Reconciler.decide(grant: grant, answer: .verified(refund), ledger: LedgerHistory()), facts: refund)
    }
    var written = 0
    let writeStart = ContinuousClock.now
    for batchStart in stride(from: 0, to: records.count, by: 500) {
        let outcome = try CheckWriter.write(
            Array(records[batchStart..<min(batchStart + 500, records.count)]), runID: run.runID, dryRun: false, counters: "{}",
            on: DatabaseConnection(connection))
        written += outcome.newEntryIDs.count
    }
    let writeSeconds = seconds(since: writeStart)

    // The same-run reference: the same rows, in the same order, copied out by psql (`COPY ... TO STDOUT`, the
    // fastest way PostgreSQL hands rows to a client). The ratio to it does not move with the machine.
    let copySeconds = try psqlCopySeconds(
        "COPY (SELECT * FROM clawback.grants WHERE purchased_at >= '\(PostgresTimestamp.format(window.start))' "
            + "AND purchased_at < '\(PostgresTimestamp.format(window.end))' ORDER BY purchased_at, transaction_id) TO STDOUT")
    let figures: [String: Any] = [
        "grants": streamed, "stream_seconds": readSeconds, "rows_per_second": Double(streamed) / readSeconds,
        "ledger_entries": written, "ledger_seconds": writeSeconds, "copy_seconds": copySeconds,
        "copy_rows_per_second": Double(streamed) / copySeconds, "share_of_copy_rate": copySeconds / readSeconds,
        "read_cpu": readCPU,
    ]
    try printJSON(figures)
    guard streamed == grantCount, written == entryCount else {
        throw BenchFailure("streamed \(streamed) of \(grantCount), wrote \(written) of \(entryCount)")
    }
}

/// Runs `sql` with psql against the benchmark's database, its output thrown away, and returns the wall time.
func psqlCopySeconds(_ sql: String) throws -> Double {
    let environment = ProcessInfo.processInfo.environment
    let arguments =
        ["/usr/bin/env", "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1"]
        + (environment["CLAWBACK_DATABASE_URL"].flatMap { $0.isEmpty ? nil : ["-d", $0] } ?? []) + ["-c", sql]
    let start = ContinuousClock.now
    let psql = try SpawnedChild(arguments, environment: environment.map { "\($0.key)=\($0.value)" }, standardError: .captured).finish()
    guard psql.termination == .exited(0) else {
        throw BenchFailure("psql ended with \(psql.termination) on the COPY reference: \(String(decoding: psql.error, as: UTF8.self))")
    }
    return seconds(since: start)
}
