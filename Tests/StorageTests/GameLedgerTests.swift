import Foundation
import Locking
import Postgres
import Storage
import Synchronization
import TestSupport
import Testing

/// The game's side of the ledger (0005_game_ledger_api.sql): claim, apply, acknowledge.
@Suite("The game's ledger API", .serialized)
struct GameLedgerTests {
    func withLedger(_ body: (String, PostgresConnection, Int64) throws -> Void) throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let runID = try #require(
                try connection.query(
                    """
                    INSERT INTO clawback.runs (scope_key, window_start, window_end, strategy, triggered_by, host)
                    VALUES ('test', now() - interval '1 month', now(), 'transaction-info', 'test', 'localhost') RETURNING run_id
                    """
                ).first?.decode(Int64.self, at: 0))
            try body(database, connection, runID)
        }
    }

    /// Writes an entry as a run would; returns its id.
    @discardableResult
    static func entry(
        _ connection: PostgresConnection, run: Int64, transaction: String, kind: String = "clawback", units: Int64 = 600,
        key: String? = nil, reverses: Int64? = nil, bundle: String = "com.studio.game"
    ) throws -> Int64 {
        try #require(
            try connection.query(
                """
                INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, reverses_entry_id, units, run_id, original_transaction_id,
                    bundle_id, environment, player_id, product_id, quantity, units_granted, purchased_at)
                VALUES (\(transaction), \(kind), \(key ?? "\(kind):\(UUID())"), \(reverses), \(units), \(run), \(transaction),
                    \(bundle), 'Production', 'player-1', 'gems_600', 1, 600, now() - interval '3 days')
                RETURNING entry_id
                """
            ).first?.decode(Int64.self, at: 0))
    }

    /// (entry id, units to apply) of a claim.
    static func claim(_ connection: PostgresConnection, _ consumer: String, limit: Int = 100, lease: String = "5 minutes") throws -> [(Int64, Int64)]
    {
        try connection.query("SELECT entry_id, units FROM clawback.claim_clawbacks(\(consumer), \(limit), \(lease)::interval)").rows.map {
            (try $0.decode(Int64.self, at: 0), try $0.decode(Int64.self, at: 1))
        }
    }

    static func acknowledge(
        _ connection: PostgresConnection, _ entry: Int64, _ outcome: String, units: Int64? = nil, note: String? = nil, by consumer: String = "game-1"
    ) throws -> Bool {
        try connection.query("SELECT clawback.acknowledge_clawback(\(entry), \(consumer), \(outcome), \(units), \(note))").first?
            .decode(Bool.self, at: 0) ?? false
    }

    /// The SQLSTATE `body` fails with, nil when it succeeds.
    static func sqlState(_ body: () throws -> Bool) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? PostgresError)?.sqlState
        }
    }

    static func acknowledgement(_ connection: PostgresConnection, _ entry: Int64) throws -> (String, Int64)? {
        try connection.query("SELECT outcome, units_applied FROM clawback.ledger_acknowledgements WHERE entry_id = \(entry)").first.map {
            (try $0.decode(String.self, at: 0), try $0.decode(Int64.self, at: 1))
        }
    }

    @Test("a reversal is applied only after its clawback, and gives back no more than was taken; one before it supersedes both")
    func reversals() throws {
        try withLedger { _, connection, run in
            // Applied, then reversed: the reversal gives all 600 back.
            let applied = try Self.entry(connection, run: run, transaction: "t-applied")
            // Reversed before anyone applied it: neither moves a unit.
            let early = try Self.entry(connection, run: run, transaction: "t-early")
            let earlyReversal = try Self.entry(connection, run: run, transaction: "t-early", kind: "reversal", units: -600, reverses: early)
            // The balance covered 200: the reversal gives back 200.
            let partial = try Self.entry(connection, run: run, transaction: "t-partial")
            // Waived: the reversal has nothing to give back.
            let waived = try Self.entry(connection, run: run, transaction: "t-waived")

            let first = try Self.claim(connection, "game-1")
            #expect(Set(first.map(\.0)) == [applied, partial, waived])
            #expect(first.allSatisfy { $0.1 == 600 })
            #expect(try Self.acknowledgement(connection, early)?.0 == "superseded")
            #expect(try Self.acknowledgement(connection, earlyReversal)?.0 == "superseded")
            #expect(try Self.acknowledge(connection, applied, "applied"))
            #expect(try Self.acknowledge(connection, partial, "partial", units: 200))
            #expect(try Self.acknowledge(connection, waived, "waived", note: "goodwill: the player reported a bug"))

            let reversal = try Self.entry(connection, run: run, transaction: "t-applied", kind: "reversal", units: -600, reverses: applied)
            let partialReversal = try Self.entry(connection, run: run, transaction: "t-partial", kind: "reversal", units: -600, reverses: partial)
            let waivedReversal = try Self.entry(connection, run: run, transaction: "t-waived", kind: "reversal", units: -600, reverses: waived)
            let second = Dictionary(uniqueKeysWithValues: try Self.claim(connection, "game-1"))
            #expect(second == [reversal: -600, partialReversal: -200])
            #expect(try Self.acknowledgement(connection, waivedReversal)?.0 == "superseded")
            // Giving back more than was taken is refused.
            #expect(throws: PostgresError.self) { try Self.acknowledge(connection, partialReversal, "applied", units: -600) }
            #expect(try Self.acknowledge(connection, partialReversal, "applied"))
            #expect(try Self.acknowledgement(connection, partialReversal)?.1 == -200)
            #expect(try Self.acknowledge(connection, reversal, "applied"))
            #expect(try Self.claim(connection, "game-1").isEmpty)
            // The player's net: what was taken minus what was given, per transaction.
            let net = try connection.query(
                """
                SELECT l.transaction_id, sum(a.units_applied) FROM clawback.ledger l JOIN clawback.ledger_acknowledgements a USING (entry_id)
                GROUP BY l.transaction_id ORDER BY 1
                """
            ).rows.map { "\(try $0.decode(String.self, at: 0))=\(try $0.decode(Int64.self, at: 1))" }
            #expect(net == ["t-applied=0", "t-early=0", "t-partial=0", "t-waived=0"])
        }
    }

    @Test("an entry a game server acknowledged by setting applied_at, before this API, is applied and never handed out")
    func acknowledgedBeforeTheAPI() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            let before = Migrator().migrations.filter { $0.version < 5 }
            try Migrator(migrations: before).migrate(on: connection.storage)
            let run = try #require(
                try connection.query(
                    """
                    INSERT INTO clawback.runs (scope_key, window_start, window_end, strategy, triggered_by, host)
                    VALUES ('test', now() - interval '1 month', now(), 'transaction-info', 'test', 'localhost') RETURNING run_id
                    """
                ).first?.decode(Int64.self, at: 0))
            let done = try Self.entry(connection, run: run, transaction: "t1")
            let pending = try Self.entry(connection, run: run, transaction: "t2")
            try connection.execute("UPDATE clawback.ledger SET applied_at = now(), applied_by = 'old-game' WHERE entry_id = \(done)")
            try Migrator().migrate(on: connection.storage)
            #expect(try Self.acknowledgement(connection, done)?.0 == "applied")
            #expect(try Self.claim(connection, "game-1").map(\.0) == [pending])
            let reversal = try Self.entry(connection, run: run, transaction: "t1", kind: "reversal", units: -600, reverses: done)
            #expect(try Self.claim(connection, "game-1").map(\.0) == [reversal])
        }
    }

    @Test("an entry ever handed out is never settled behind its consumer's back; leases, names and give-backs are held to the rules")
    func leasesAndGiveBacks() throws {
        try withLedger { _, connection, run in
            // Handed out, its lease ran out unacknowledged, then Apple reversed the refund: handed out again,
            // marked reversed, for the consumer to say whether it had applied it.
            let entry = try Self.entry(connection, run: run, transaction: "t-lease")
            #expect(try Self.claim(connection, "game-1", lease: "1 millisecond").map(\.0) == [entry])
            usleep(20_000)
            let reversal = try Self.entry(connection, run: run, transaction: "t-lease", kind: "reversal", units: -600, reverses: entry)
            let again = try connection.query("SELECT entry_id, reversed FROM clawback.claim_clawbacks('game-2')").rows.map {
                (try $0.decode(Int64.self, at: 0), try $0.decode(Bool.self, at: 1))
            }
            #expect(again.count == 1 && again.first?.0 == entry && again.first?.1 == true)
            #expect(try Self.acknowledgement(connection, entry) == nil)
            // Someone else may not acknowledge what game-2 holds now; game-2 says it had been applied.
            #expect(Self.sqlState { try Self.acknowledge(connection, entry, "superseded", by: "game-1") } == "CB025")
            #expect(try Self.acknowledge(connection, entry, "applied", by: "game-2"))
            // The same acknowledgement from another consumer is not a retry: it applied it a second time.
            #expect(Self.sqlState { try Self.acknowledge(connection, entry, "applied", by: "game-1") } == "CB020")
            #expect(try !Self.acknowledge(connection, entry, "applied", by: "game-2"))
            #expect(Dictionary(uniqueKeysWithValues: try Self.claim(connection, "game-2")) == [reversal: -600])
            // A give-back cannot be waived: the player would lose units for a refund Apple reversed.
            #expect(Self.sqlState { try Self.acknowledge(connection, reversal, "waived", note: "no", by: "game-2") } == "CB023")
            #expect(try Self.acknowledge(connection, reversal, "applied", by: "game-2"))

            // A refund that shrank after a partial clawback: the player still owes more than was taken, so
            // nothing is given back (600 owed, 200 taken, then the refund became 50%: 300 owed, 200 taken).
            let shrinking = try Self.entry(connection, run: run, transaction: "t-shrink")
            #expect(try Self.claim(connection, "game-1").map(\.0) == [shrinking])
            #expect(try Self.acknowledge(connection, shrinking, "partial", units: 200))
            let lowered = try Self.entry(connection, run: run, transaction: "t-shrink", kind: "adjustment", units: -300)
            #expect(try Self.claim(connection, "game-1").isEmpty)
            #expect(try Self.acknowledgement(connection, lowered)?.0 == "superseded")

            // Setting applied_at by hand (a game server on the old advice) is refused instead of looking applied.
            let manual = try Self.entry(connection, run: run, transaction: "t-manual")
            #expect(throws: PostgresError.self) { try connection.execute("UPDATE clawback.ledger SET applied_at = now() WHERE entry_id = \(manual)") }
            // Reviews: staff waive them (clawback ledger waive); the game cannot, not even under a staff name.
            let review = try Self.entry(connection, run: run, transaction: "t-review", kind: "review", units: 0)
            #expect(Self.sqlState { try Self.acknowledge(connection, review, "applied") } == "CB022")
            #expect(Self.sqlState { try Self.acknowledge(connection, review, "waived", note: "fine", by: "game-1") } == "CB022")
            #expect(Self.sqlState { try Self.acknowledge(connection, manual, "applied", by: "staff:ana") } == "CB023")
            #expect(Self.sqlState { try Self.acknowledge(connection, manual, "applied", by: "clawback") } == "CB023")
            #expect(try StaffLedger.waive(review, by: "ana", reason: "checked: a test purchase", on: connection.storage))
            #expect(try Self.acknowledgement(connection, review)?.0 == "waived")
            #expect(try StaffLedger.waive(manual, by: "ana", reason: "goodwill: the player reported the bug", on: connection.storage))
            // Staff cannot waive what a consumer was handed (it may have applied it), even after the lease ended.
            let handed = try Self.entry(connection, run: run, transaction: "t-handed")
            #expect(try Self.claim(connection, "game-1", lease: "1 millisecond").map(\.0).contains(handed))
            usleep(20_000)
            #expect(Self.sqlState { try StaffLedger.waive(handed, by: "ana", reason: "goodwill", on: connection.storage) } == "CB025")
            #expect(Self.sqlState { try Self.acknowledge(connection, handed, "applied", by: "game-2") } == "CB025")
        }
    }

    @Test("an acknowledgement is once: the same again is a no-op, different values are refused, and nothing is acknowledged out of order")
    func acknowledgementsAreFinal() throws {
        try withLedger { _, connection, run in
            let entry = try Self.entry(connection, run: run, transaction: "t1")
            let adjustment = try Self.entry(connection, run: run, transaction: "t1", kind: "adjustment", units: 300)
            let review = try Self.entry(connection, run: run, transaction: "t2", kind: "review", units: 0)
            #expect(Self.sqlState { try Self.acknowledge(connection, adjustment, "applied") } == "CB024")
            #expect(Self.sqlState { try Self.acknowledge(connection, entry, "waived") } == "CB023")  // no note
            #expect(Self.sqlState { try Self.acknowledge(connection, entry, "partial", units: 600) } == "CB023")  // that is all of it
            #expect(Self.sqlState { try Self.acknowledge(connection, entry, "superseded") } == "CB023")  // not reversed
            #expect(Self.sqlState { try Self.acknowledge(connection, entry, "eaten") } == "CB023")
            #expect(Self.sqlState { try Self.acknowledge(connection, 999_999, "applied") } == "CB021")
            #expect(Self.sqlState { try Self.acknowledge(connection, review, "applied") } == "CB022")
            #expect(try Self.acknowledge(connection, entry, "partial", units: 150))
            #expect(try !Self.acknowledge(connection, entry, "partial", units: 150))  // a retry
            #expect(Self.sqlState { try Self.acknowledge(connection, entry, "applied") } == "CB020")
            #expect(Self.sqlState { try Self.acknowledge(connection, entry, "partial", units: 100) } == "CB020")
            // Nothing about it changes afterwards, not even by hand.
            #expect(throws: PostgresError.self) { try connection.execute("UPDATE clawback.ledger SET applied_at = NULL WHERE entry_id = \(entry)") }
            #expect(throws: PostgresError.self) {
                try connection.execute("UPDATE clawback.ledger_acknowledgements SET units_applied = 600 WHERE entry_id = \(entry)")
            }
            #expect(throws: PostgresError.self) { try connection.execute("DELETE FROM clawback.ledger_acknowledgements") }
            #expect(try Self.acknowledge(connection, adjustment, "applied"))
        }
    }

    @Test("a consumer claims only the apps it serves; reserved names and an empty app list are refused (CB023)")
    func claimsForItsApps() throws {
        try withLedger { _, connection, run in
            let game = try Self.entry(connection, run: run, transaction: "g1", bundle: "com.studio.game")
            let puzzle = try Self.entry(connection, run: run, transaction: "p1", bundle: "com.studio.puzzle")
            let other = try Self.entry(connection, run: run, transaction: "o1", bundle: "com.studio.other")
            func claim(_ consumer: String, _ bundles: String) throws -> [Int64] {
                try connection.query(
                    "SELECT entry_id FROM clawback.claim_clawbacks(p_consumer => \(consumer), p_bundle_ids => \(unescaped: bundles))"
                ).rows.map { try $0.decode(Int64.self, at: 0) }
            }
            #expect(try claim("puzzle-server-1", "ARRAY['com.studio.puzzle']") == [puzzle])
            #expect(try claim("game-server-1", "ARRAY['com.studio.game', 'com.studio.unknown']") == [game])
            for (consumer, bundles) in [
                ("staff:alice", "NULL"), ("clawback", "NULL"), ("before-0005", "NULL"), ("game-server-2", "'{}'::text[]"),
                ("game-server-2", "ARRAY[NULL]::text[]"),
            ] {
                #expect(Self.sqlState { try claim(consumer, bundles).isEmpty } == "CB023", "\(consumer) \(bundles)")
            }
            // Without a list, as before: every app's entries (here the one left).
            #expect(try Self.claim(connection, "any-server-1").map(\.0) == [other])
        }
    }

    @Test("the game's role can record grants, claim and acknowledge, and nothing else")
    func minimalRole() throws {
        try withLedger { _, connection, run in
            let entry = try Self.entry(connection, run: run, transaction: "t1")
            _ = try connection.query("SELECT clawback.ensure_grant_partitions(now() - interval '1 month', now() + interval '1 month')")
            try connection.execute("SET ROLE clawback_game")
            defer { _ = try? connection.execute("RESET ROLE") }
            let recorded = try connection.query(
                "SELECT clawback.record_grant('2000000001', '2000000001', 'com.studio.game', 'gems_600', 'Production', 'p1', 600, now())"
            ).first?.decode(Bool.self, at: 0)
            #expect(recorded == true)
            #expect(try Self.claim(connection, "game-1").map(\.0) == [entry])
            #expect(try Self.acknowledge(connection, entry, "applied"))
            for statement: PostgresQuery in [
                "SELECT count(*) FROM clawback.ledger", "SELECT count(*) FROM clawback.grants", "UPDATE clawback.ledger SET units = 1",
                "DELETE FROM clawback.ledger", "INSERT INTO clawback.ledger_acknowledgements VALUES (1, 'applied', 0, NULL, 'x', now())",
                "SELECT count(*) FROM clawback.runs", "SELECT clawback.ensure_grant_partitions(now(), now() + interval '1 month')",
                "SELECT clawback.staff_waive(1, 'ana', 'why')", "SELECT clawback.record_acknowledgement(1, 'x', 'waived', 0, 'y', true)",
            ] {
                let refused = try #require(throws: PostgresError.self) { try connection.query(statement) }
                #expect(refused.sqlState == "42501", "\(statement): \(refused)")
            }
            try connection.execute("RESET ROLE")
            // Of every function in the schema, later migrations' included, the role may execute exactly its five.
            let executable = try connection.query(
                """
                SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'clawback' AND has_function_privilege('clawback_game', p.oid, 'EXECUTE') ORDER BY 1
                """
            ).rows.map { try $0.decode(String.self, at: 0) }
            #expect(executable == ["acknowledge_clawback", "claim_clawbacks", "record_google_grant", "record_grant", "record_stripe_grant"])
            // Every function that runs as the owner runs on a fixed search path: no caller's schema can shadow what it calls.
            let unpinned = try connection.query(
                """
                SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'clawback' AND p.prosecdef
                  AND NOT coalesce(p.proconfig @> ARRAY['search_path=pg_catalog, pg_temp'], false)
                """
            ).rows.map { try $0.decode(String.self, at: 0) }
            #expect(unpinned.isEmpty, "\(unpinned)")
        }
    }

    @Test(
        "8 consumers share 21,000 entries: each acknowledged exactly once; a consumer that dies mid-batch has its entries handed out again after the lease"
    )
    func concurrentConsumers() throws {
        try withLedger { database, connection, run in
            let single = 20_000
            let paired = 500
            try connection.execute(
                """
                INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, units, run_id, original_transaction_id, bundle_id,
                    environment, player_id, product_id, quantity, units_granted, purchased_at)
                SELECT 't' || i, 'clawback', 'clawback:' || i, 600, \(run), 't' || i, 'com.studio.game', 'Production', 'p' || (i % 977),
                    'gems_600', 1, 600, now() - interval '3 days'
                FROM generate_series(1, \(single + paired)::integer) AS i
                """)
            // Some transactions have a second entry (a prorated refund that became full), applied after the first.
            try connection.execute(
                """
                INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, units, run_id, original_transaction_id, bundle_id,
                    environment, player_id, product_id, quantity, units_granted, purchased_at)
                SELECT 't' || i, 'adjustment', 'adjustment:' || i, 300, \(run), 't' || i, 'com.studio.game', 'Production', 'p' || (i % 977),
                    'gems_600', 1, 600, now() - interval '3 days'
                FROM generate_series(\(single + 1)::integer, \(single + paired)::integer) AS i
                """)
            let total = single + 2 * paired
            // A consumer that claims a batch and dies before acknowledging it.
            let dead = try TestPostgres.connect(database: database)
            let abandoned = Set(try Self.claim(dead, "dead", limit: 300, lease: "2 seconds").map(\.0))
            #expect(abandoned.count == 300)
            dead.close()

            let doubles = Atomic<Int>(0)
            let failures = Locked<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 8) { index in
                do {
                    let consumer = try TestPostgres.connect(database: database)
                    let name = "game-\(index)"
                    let deadline = Date() + 90
                    while Date() < deadline {
                        let batch = try consumer.withTransaction { tx in
                            let claimed = try Self.claim(tx, name, limit: 200, lease: "30 seconds")
                            for (entry, _) in claimed where try !Self.acknowledge(tx, entry, "applied", by: name) {
                                doubles.add(1, ordering: .relaxed)
                            }
                            return claimed.count
                        }
                        if batch > 0 { continue }
                        let left =
                            try consumer.query(
                                """
                                SELECT count(*) FROM clawback.ledger l
                                WHERE NOT EXISTS (SELECT 1 FROM clawback.ledger_acknowledgements a WHERE a.entry_id = l.entry_id)
                                """
                            ).first?.decode(Int.self, at: 0) ?? 0
                        if left == 0 { break }
                        usleep(100_000)  // what is left is leased (the dead consumer's) or next in line
                    }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            #expect(failures.withLock { $0 }.isEmpty, "\(failures.withLock { $0 })")
            #expect(doubles.load(ordering: .relaxed) == 0)
            let acknowledged = try #require(
                try connection.query("SELECT count(*), count(DISTINCT entry_id) FROM clawback.ledger_acknowledgements").first)
            #expect(try acknowledged.decode(Int.self, at: 0) == total)
            #expect(try acknowledged.decode(Int.self, at: 1) == total)
            let byDead = try connection.query("SELECT count(*) FROM clawback.ledger_acknowledgements WHERE acknowledged_by = 'dead'").first?
                .decode(Int.self, at: 0)
            #expect(byDead == 0)
            // Every transaction's entries were acknowledged in ledger order.
            let disorder = try connection.query(
                """
                SELECT count(*) FROM clawback.ledger a JOIN clawback.ledger b ON a.transaction_id = b.transaction_id AND a.entry_id < b.entry_id
                JOIN clawback.ledger_acknowledgements x ON x.entry_id = a.entry_id JOIN clawback.ledger_acknowledgements y ON y.entry_id = b.entry_id
                WHERE x.acknowledged_at > y.acknowledged_at
                """
            ).first?.decode(Int.self, at: 0)
            #expect(disorder == 0)
        }
    }
}
