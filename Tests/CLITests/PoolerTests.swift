import AppStoreSimulator
import Foundation
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

/// Studios put PgBouncer in transaction mode between their servers and PostgreSQL. The game's functions
/// must work through it, and the jobs' single-flight locks must hold through it: a session-level advisory
/// lock does not (a second client may run on the server connection that holds it, and re-enter it).
@Suite("through PgBouncer in transaction pooling mode", .serialized)
struct PoolerTests {
    @Test(
        "two runs of one scope started at once through PgBouncer: one runs, the other exits 85 naming the holder; one run, one attempt, every refund clawed back once"
    )
    func runsAreSingleFlight() async throws {
        try await RunCrashTests.Setup.with(purchases: 400, seed: 51) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let bouncer = try PgBouncer.start(database: database, poolSize: 4)
                defer { bouncer.stop() }
                // Apple's pace for the run (about four seconds), so that the second starts while the first holds the scope.
                let config = try String(contentsOfFile: setup.configPath, encoding: .utf8)
                let paced = setup.directory.appendingPathComponent("paced.yaml").path
                try config.replacingOccurrences(of: "transaction_info: 100000", with: "transaction_info: 100")
                    .write(toFile: paced, atomically: true, encoding: .utf8)
                let environment = ["CLAWBACK_CONFIG": paced, "CLAWBACK_DATABASE_URL": bouncer.connectionString(database: database)]
                async let first = CommandRunner.run("clawback", setup.arguments, environment: environment)
                async let second = CommandRunner.run("clawback", setup.arguments, environment: environment)
                let results = try await [first, second]
                #expect(results.map(\.status).sorted() == [0, 85], "\(results.map { "\($0.status): \($0.standardError)" })")
                let locked = results.first { $0.status == 85 }
                #expect(locked?.standardError.contains("another run holds the lock") == true)
                #expect(locked?.standardError.contains("clawback-lock") == true, "the holder is named: \(locked?.standardError ?? "")")

                let connection = try TestPostgres.connect(database: database)
                let runs = try connection.query("SELECT count(*), max(attempts) FROM clawback.runs").first
                #expect(try runs?.decode(Int.self, at: 0) == 1)
                #expect(try runs?.decode(Int.self, at: 1) == 1, "the second process never resumed the first's run")
                let refunded = setup.output.world.transactions.values.filter { $0.refund != nil }.count
                let clawbacks = try connection.query("SELECT count(*), count(DISTINCT transaction_id) FROM clawback.ledger WHERE kind = 'clawback'")
                    .first
                #expect(try clawbacks?.decode(Int.self, at: 0) == refunded && refunded > 0)
                #expect(try clawbacks?.decode(Int.self, at: 1) == refunded)
            }
        }
    }

    @Test(
        "a job's lock taken through PgBouncer holds: run and refund-requests answer exit 85 while it is held, and run once it is released; the game's functions answer through it"
    )
    func lockHeldThroughPooler() async throws {
        try await RunCrashTests.Setup.with(purchases: 120, seed: 52) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let bouncer = try PgBouncer.start(database: database, poolSize: 3)
                defer { bouncer.stop() }
                let pooled = PostgresConfiguration(connectionString: bouncer.connectionString(database: database), applicationName: "pooled-holder")
                let environment = ["CLAWBACK_CONFIG": setup.configPath, "CLAWBACK_DATABASE_URL": bouncer.connectionString(database: database)]
                let window = try ReconciliationWindow(start: try ReconciliationWindow.date(setup.from), end: try ReconciliationWindow.date(setup.to))
                let scope = RunScope(selection: GrantSelection(window: window), strategy: .transactionInfo, dryRun: false)
                for (key, command) in [(scope.lockKey, setup.arguments), (RefundRequestStore.lockKey, ["refund-requests", "answer"])] {
                    let holder = try PostgresConnection(pooled)
                    #expect(try holder.tryAdvisoryLockInOpenTransaction(key.advisory))
                    // Other pooled sessions come and go meanwhile, on whatever server connection is free.
                    for _ in 0..<5 { _ = try PostgresConnection(pooled).query("SELECT 1") }
                    let refused = try await CommandRunner.run("clawback", command, environment: environment)
                    #expect(refused.status == 85, "\(command): \(refused.standardError)")
                    try holder.releaseOpenTransactionLock()
                    let ran = try await CommandRunner.run("clawback", command, environment: environment)
                    #expect(ran.status == 0, "\(command): \(ran.standardError)")
                }

                let game = try PostgresConnection(pooled)
                let recorded = try game.query(
                    """
                    SELECT clawback.record_grant(
                        p_transaction_id => '9000000000000001', p_original_transaction_id => '9000000000000001',
                        p_bundle_id => 'com.example.clawback.game', p_product_id => 'gems_100', p_environment => 'Production',
                        p_player_id => 'player-pooled', p_units_granted => 100, p_purchased_at => now() - interval '1 hour')
                    """
                ).first?.decode(Bool.self, at: 0)
                #expect(recorded == true)
                let again = try game.query(
                    """
                    SELECT clawback.record_grant(
                        p_transaction_id => '9000000000000001', p_original_transaction_id => '9000000000000001',
                        p_bundle_id => 'com.example.clawback.game', p_product_id => 'gems_100', p_environment => 'Production',
                        p_player_id => 'player-pooled', p_units_granted => 100, p_purchased_at => now() - interval '1 hour')
                    """
                ).first?.decode(Bool.self, at: 0)
                #expect(again == false, "granted at most once through the pooler too")
                let written = try TestPostgres.connect(database: database).query("SELECT count(*) FROM clawback.ledger WHERE kind = 'clawback'")
                    .first?.decode(Int.self, at: 0)
                let claimed = try game.query("SELECT count(*) FROM clawback.claim_clawbacks('game-server-pooled', 1000, interval '5 minutes')").first?
                    .decode(Int.self, at: 0)
                #expect(
                    (written ?? 0) > 0 && claimed == written,
                    "the run's clawbacks are handed out through the pooler: \(claimed ?? -1) of \(written ?? -1)")
                let handed = try TestPostgres.connect(database: database).query(
                    "SELECT entry_id FROM clawback.ledger_queue WHERE consumer = 'game-server-pooled' ORDER BY entry_id LIMIT 1"
                ).first?.decode(Int64.self, at: 0)
                let entry = try #require(handed)
                let acknowledged = try game.query("SELECT clawback.acknowledge_clawback(\(entry), 'game-server-pooled', 'applied')").first?
                    .decode(Bool.self, at: 0)
                #expect(acknowledged == true, "acknowledged through the pooler")

                // grants import through the pooler: its table, rows and insert in one transaction, so on one server
                // connection; nothing is left behind on it for the next client.
                let file = setup.directory.appendingPathComponent("pooled.jsonl")
                let purchased = ISO8601DateFormatter().string(from: Date() - 3600)
                try (0..<40).map { index in
                    #"{"transaction_id":"91000000000\#(index)","bundle_id":"com.example.clawback.game","product_id":"gems_100","environment":"Production","player_id":"player-\#(index)","units_granted":100,"purchased_at":"\#(purchased)"}"#
                }.joined(separator: "\n").write(to: file, atomically: true, encoding: .utf8)
                let imported = try await CommandRunner.run("clawback", ["grants", "import", file.path], environment: environment)
                #expect(imported.status == 0, "\(imported.standardError)")
                let count = try TestPostgres.connect(database: database).query(
                    "SELECT count(*) FROM clawback.grants WHERE transaction_id LIKE '91000000000%'"
                ).first?.decode(Int.self, at: 0)
                #expect(count == 40)
                let reimported = try await CommandRunner.run("clawback", ["grants", "import", file.path], environment: environment)
                #expect(reimported.status == 0, "a second import through the pooler finds no table left over: \(reimported.standardError)")
            }
        }
    }
}
