import Foundation
import Postgres
import Reconciliation
import Storage
import TestSupport

/// A migrated scratch database with runs, checks and ledger entries written directly, as the job would
/// have left them: reports are a function of those tables alone.
struct ReportFixture {
    let connection: PostgresConnection
    let database: String
    let directory: URL

    static let windowStart = Date(timeIntervalSince1970: 1_785_542_400)  // 2026-08-01
    static let windowEnd = Date(timeIntervalSince1970: 1_793_491_200)  // 2026-11-01

    static func with<T>(_ body: (ReportFixture) throws -> T) throws -> T {
        try TestPostgres.withScratchDatabase { database in
            let fixture = try make(database)
            defer { try? FileManager.default.removeItem(at: fixture.directory) }
            return try body(fixture)
        }
    }

    /// The same, for an async body (one that awaits a process instead of blocking a thread of the test pool).
    static func withAsync<T>(_ body: (ReportFixture) async throws -> T) async throws -> T {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let fixture = try make(database)
            defer { try? FileManager.default.removeItem(at: fixture.directory) }
            return try await body(fixture)
        }
    }

    /// A fixture on the scratch `database`, migrated, with a report directory of its own.
    private static func make(_ database: String) throws -> ReportFixture {
        let connection = try TestPostgres.connect(database: database)
        _ = try Migrator().migrate(on: connection.storage)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-reports-\(UUID().uuidString)")
        return ReportFixture(connection: connection, database: database, directory: directory)
    }

    @discardableResult
    func run(
        start: Date = windowStart, end: Date = windowEnd, shard: (Int, Int) = (0, 1), player: String? = nil, dryRun: Bool = false,
        status: String = "succeeded", grantsInScope: Int = 0, appleRequests: Int = 0, strategy: RunStrategy = .transactionInfo,
        counters: String? = nil
    ) throws -> Int64 {
        // 1.1.0's keys by default: a report reads runs stored before the store-neutral ones.
        let counters = counters ?? "{\"grantsInScope\": \(grantsInScope), \"appleRequests\": \(appleRequests), \"appleRateLimited\": 0}"
        let row = try connection.query(
            """
            INSERT INTO clawback.runs (scope_key, window_start, window_end, player_id, shard_index, shard_count, strategy, dry_run,
                triggered_by, host, status, counters, finished_at)
            VALUES (\(UUID().uuidString), \(start), \(end), \(player), \(shard.0), \(shard.1), \(strategy.rawValue), \(dryRun), 'test', 'test',
                \(status), \(counters)::jsonb, now())
            RETURNING run_id
            """)
        return try row.first?.decode(Int64.self, at: 0) ?? 0
    }

    struct Check {
        var transactionID: String
        var playerID = "player-1"
        var productID = "gems_600"
        var verdict = "refunded"
        var action = "clawback_created"
        var unitsGranted: Int64 = 600
        var unitsClawedBack: Int64 = 600
        var revocationDate: Date? = Date(timeIntervalSince1970: 1_791_037_267.25)
        var revocationType: String? = "REFUND_FULL"
        var revocationReason: Int? = 1
        var revocationPercentage: Int? = nil
        var priceMilli: Int64? = 9990
        var currency: String? = "USD"
        var purchasedAt = Date(timeIntervalSince1970: 1_790_000_000)
        var detail: String? = "REFUND_FULL: 600 of 600 units"
        /// A ledger entry of these units written by the same run (nil: none).
        var ledgerUnits: Int64? = 600
    }

    func check(_ check: Check, run runID: Int64) throws {
        try connection.execute(
            """
            INSERT INTO clawback.checks (run_id, transaction_id, original_transaction_id, bundle_id, environment, player_id, product_id,
                quantity, units_granted, purchased_at, verdict, action, units_clawed_back, apple_environment, revocation_date,
                revocation_type, revocation_reason, revocation_percentage, apple_price_milli, apple_currency, apple_storefront, detail)
            VALUES (\(runID), \(check.transactionID), \(check.transactionID + "-orig"), 'com.studio.game', 'Production', \(check.playerID),
                \(check.productID), 1, \(check.unitsGranted), \(check.purchasedAt), \(check.verdict), \(check.action), \(check.unitsClawedBack),
                'Production', \(check.revocationDate), \(check.revocationType), \(check.revocationReason), \(check.revocationPercentage),
                \(check.priceMilli), \(check.currency), 'USA', \(check.detail))
            """)
        guard let units = check.ledgerUnits else { return }
        try connection.execute(
            """
            INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, units, run_id, original_transaction_id, bundle_id,
                environment, player_id, product_id, quantity, units_granted, purchased_at, revocation_date)
            VALUES (\(check.transactionID), 'clawback', \("clawback:\(runID)"), \(units), \(runID), \(check.transactionID + "-orig"),
                'com.studio.game', 'Production', \(check.playerID), \(check.productID), 1, \(check.unitsGranted), \(check.purchasedAt),
                \(check.revocationDate))
            """)
    }

    /// A reversal of the transaction's latest take-back, written by `run`, as the job writes one when Apple
    /// reverses a refund.
    func reversal(transaction: String, units: Int64, run runID: Int64) throws {
        try connection.execute(
            """
            INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, reverses_entry_id, units, run_id, original_transaction_id,
                bundle_id, environment, player_id, product_id, quantity, units_granted, purchased_at)
            SELECT transaction_id, 'reversal', 'reversal:' || entry_id, entry_id, \(units), \(runID), original_transaction_id, bundle_id,
                environment, player_id, product_id, quantity, units_granted, purchased_at
            FROM clawback.ledger WHERE transaction_id = \(transaction) AND units > 0 ORDER BY entry_id DESC LIMIT 1
            """)
    }

    /// The game acknowledges the entry of `transaction` (through the ledger's own function).
    func acknowledge(transaction: String, outcome: String, units: Int64? = nil, note: String? = nil) throws {
        try connection.execute(
            """
            SELECT clawback.acknowledge_clawback(entry_id, 'test-game', \(outcome), \(units), \(note))
            FROM clawback.ledger WHERE transaction_id = \(transaction) AND kind <> 'review' ORDER BY entry_id DESC LIMIT 1
            """)
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}
