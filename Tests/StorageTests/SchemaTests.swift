import Foundation
import Postgres
import Storage
import TestSupport
import Testing

/// The contracts of 0001_init.sql that other programs rely on.
@Suite("Schema contracts")
struct SchemaTests {
    /// Runs `body` against a freshly migrated scratch database.
    func withMigratedDatabase(_ body: (String, PostgresConnection) throws -> Void) throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            try body(database, connection)
        }
    }

    /// Whether some session of `database` comes to wait for a lock matching `condition` (a `pg_locks` filter)
    /// within ten seconds; pg_locks lists the whole cluster's, and tests beside this one run in other databases.
    /// Only lock types that name a database (advisory, relation): a transaction id's lock names none.
    static func waits(database: String, on condition: String) throws -> Bool {
        let monitor = try TestPostgres.connect(database: database)
        let databaseOID = "(SELECT oid FROM pg_database WHERE datname = current_database())"
        for _ in 0..<500 {
            let waiting =
                try monitor.query(
                    "SELECT count(*) > 0 FROM pg_locks WHERE \(unescaped: condition) AND NOT granted AND database = \(unescaped: databaseOID)"
                ).first?
                .decode(Bool.self, at: 0) ?? false
            if waiting { return true }
            usleep(20_000)
        }
        return false
    }

    static func recordGrant(_ connection: PostgresConnection, id: String, purchasedAt: Date) throws -> Bool {
        try connection.query(
            """
            SELECT clawback.record_grant(\(id), \(id), 'com.studio.game', 'gems_600', 'Production', 'player-1',
                                         600, \(purchasedAt))
            """
        ).first?.decode(Bool.self, at: 0) ?? false
    }

    @Test("record_grant records a fresh purchase once and answers false for the same id again")
    func atMostOnce() throws {
        try withMigratedDatabase { _, connection in
            let now = Date()
            #expect(try Self.recordGrant(connection, id: "2000000001", purchasedAt: now.addingTimeInterval(-3600)))
            let again = try Self.recordGrant(connection, id: "2000000001", purchasedAt: now.addingTimeInterval(-3600))
            #expect(!again)
            // Even with another purchase date, the id is granted only once.
            let otherDate = try Self.recordGrant(connection, id: "2000000001", purchasedAt: now.addingTimeInterval(-7200))
            #expect(!otherDate)
            #expect(try connection.query("SELECT count(*) FROM clawback.grants").first?.decode(Int.self, at: 0) == 1)
        }
    }

    @Test("record_grant refuses a purchase older than the acceptance window (CB001) or in the future (CB002)")
    func tailWindowGuard() throws {
        try withMigratedDatabase { _, connection in
            let old = try #require(throws: PostgresError.self) {
                try Self.recordGrant(connection, id: "old", purchasedAt: Date().addingTimeInterval(-31 * 86_400))
            }
            #expect(old.sqlState == "CB001")
            #expect(old.message.contains("older than the acceptance window"))
            #expect(old.hint != nil)
            let future = try #require(throws: PostgresError.self) {
                try Self.recordGrant(connection, id: "future", purchasedAt: Date().addingTimeInterval(3600))
            }
            #expect(future.sqlState == "CB002")
        }
    }

    @Test("two sessions granting the same id at once: the second waits for the first, then answers false")
    func concurrentGrants() throws {
        try withMigratedDatabase { database, first in
            let purchasedAt = Date().addingTimeInterval(-60)
            let box = ResultBox()
            try first.withTransaction { tx throws in
                let recorded = try Self.recordGrant(tx, id: "2000000777", purchasedAt: purchasedAt)
                #expect(recorded)
                let thread = Thread {
                    box.set(
                        Result {
                            let second = try TestPostgres.connect(database: database)
                            return try Self.recordGrant(second, id: "2000000777", purchasedAt: purchasedAt) ? 1 : 0
                        })
                }
                thread.start()
                // Commit only once the second call is provably waiting on the transaction-scoped lock.
                #expect(try Self.waits(database: database, on: "locktype = 'advisory'"), "the second session never waited on the lock")
            }
            #expect(try box.wait().get() == 0)
            #expect(try first.query("SELECT count(*) FROM clawback.grants").first?.decode(Int.self, at: 0) == 1)
        }
    }

    @Test("record_grant refuses REPEATABLE READ (CB003): its snapshot could not see a concurrent grant of the same id")
    func repeatableReadRefused() throws {
        try withMigratedDatabase { _, connection in
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            let refused = try #require(throws: PostgresError.self) {
                try Self.recordGrant(connection, id: "2000000888", purchasedAt: Date().addingTimeInterval(-60))
            }
            try connection.execute("ROLLBACK")
            #expect(refused.sqlState == "CB003")
            #expect(refused.hint?.contains("READ COMMITTED") == true)
            try connection.execute("BEGIN ISOLATION LEVEL SERIALIZABLE")
            #expect(try Self.recordGrant(connection, id: "2000000888", purchasedAt: Date().addingTimeInterval(-60)))
            try connection.execute("COMMIT")
        }
    }

    @Test("an import beside a grant in flight waits for it, and never lands the same id with another purchase date")
    func importBesideGrant() throws {
        try withMigratedDatabase { database, first in
            _ = try first.query("SELECT clawback.ensure_grant_partitions(now() - interval '2 months', now() + interval '1 month')")
            let box = ResultBox()
            try first.withTransaction { tx throws in
                #expect(try Self.recordGrant(tx, id: "2000000999", purchasedAt: Date().addingTimeInterval(-60)))
                let thread = Thread {
                    box.set(
                        Result {
                            let second = try TestPostgres.connect(database: database)
                            let line =
                                #"{"transaction_id":"2000000999","original_transaction_id":"2000000999","bundle_id":"com.studio.game","#
                                + #""product_id":"gems_600","environment":"Production","player_id":"player-1","units_granted":600,"#
                                + #""purchased_at":"\#(Date().addingTimeInterval(-7200).formatted(.iso8601))"}"#
                            return try GrantImport.importJSONLines(Data((line + "\n").utf8), skipInvalid: false, on: second.storage).inserted
                        })
                }
                thread.start()
                #expect(
                    try Self.waits(database: database, on: "locktype = 'relation' AND mode = 'ShareRowExclusiveLock'"),
                    "the import never waited for the grant in flight")
            }
            #expect(try box.wait().get() == 0)
            #expect(try first.query("SELECT count(*) FROM clawback.grants").first?.decode(Int.self, at: 0) == 1)
        }
    }

    @Test("the ledger cannot be truncated, nor deleted from by another role that sets the pruning flag")
    func ledgerWithoutBackDoors() throws {
        try withMigratedDatabase { database, connection in
            // Refused by the guard, or, with the tables that refer to it, by PostgreSQL itself.
            let truncated = try #require(throws: PostgresError.self) { try connection.execute("TRUNCATE clawback.ledger") }
            #expect(["CB010", "0A000"].contains(truncated.sqlState))
            let cascading = try #require(throws: PostgresError.self) { try connection.execute("TRUNCATE clawback.ledger CASCADE") }
            #expect(cascading.sqlState == "CB010")
            let cascaded = try #require(throws: PostgresError.self) { try connection.execute("TRUNCATE clawback.runs CASCADE") }
            #expect(cascaded.sqlState == "CB010")
            let role = "intruder_" + database.suffix(12).filter { $0.isLetter || $0.isNumber }
            try connection.executeScript(
                unsafeSQL: """
                    CREATE ROLE \(role);
                    GRANT USAGE ON SCHEMA clawback TO \(role);
                    GRANT SELECT, DELETE ON clawback.ledger TO \(role);
                    """)
            defer { _ = try? connection.executeScript(unsafeSQL: "RESET ROLE; DROP OWNED BY \(role); DROP ROLE \(role);") }
            let runID = try connection.query(
                """
                INSERT INTO clawback.runs (scope_key, window_start, window_end, strategy, triggered_by, host)
                VALUES ('test', now() - interval '1 month', now(), 'transaction-info', 'test', 'localhost') RETURNING run_id
                """
            ).first?.decode(Int64.self, at: 0)
            try connection.execute(
                """
                INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, units, run_id, original_transaction_id, bundle_id,
                    environment, player_id, product_id, quantity, units_granted, purchased_at)
                VALUES ('t1', 'clawback', 'clawback:1', 600, \(runID), 't1', 'b', 'Production', 'p', 'gems', 1, 600, now())
                """)
            try connection.executeScript(unsafeSQL: "BEGIN; SET LOCAL ROLE \(role); SET LOCAL clawback.ledger_retention_prune = 'on';")
            let deleted = try #require(throws: PostgresError.self) { try connection.execute("DELETE FROM clawback.ledger") }
            try connection.execute("ROLLBACK")
            #expect(deleted.sqlState == "CB010")
            #expect(try connection.query("SELECT count(*) FROM clawback.ledger").first?.decode(Int.self, at: 0) == 1)
        }
    }

    @Test("grants land in their month's partition; partitions exist from retention to two months ahead")
    func partitions() throws {
        try withMigratedDatabase { _, connection in
            #expect(try GrantPartitions.ensureAhead(on: connection.storage) >= 7)  // retention (4 months), this one, 2 ahead
            #expect(try GrantPartitions.ensureAhead(on: connection.storage) == 0, "existing partitions are left alone")
            #expect(try Self.recordGrant(connection, id: "2000000002", purchasedAt: Date().addingTimeInterval(-60)))
            let partition = try connection.query(
                "SELECT tableoid::regclass::text FROM clawback.grants WHERE transaction_id = '2000000002'"
            ).first?.decode(String.self, at: 0)
            let month = try connection.query("SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYY_MM')").first?.decode(String.self, at: 0)
            #expect(partition == "clawback.grants_\(month ?? "")")
            let names = try connection.query(
                """
                SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                WHERE i.inhparent = 'clawback.grants'::regclass AND c.relname <> 'grants_default' ORDER BY 1
                """
            ).rows.map { try $0.decode(String.self, at: 0) }
            let ahead = try connection.query(
                "SELECT to_char((now() AT TIME ZONE 'UTC') + interval '2 months', 'YYYY_MM')"
            ).first?.decode(String.self, at: 0)
            #expect(names.contains("grants_\(ahead ?? "")"))
            #expect(names.count >= 7)  // four months of retention, this month, two ahead
        }
    }

    @Test("the ledger is append-only: only the acknowledgement may change, nothing may be deleted")
    func ledgerAppendOnly() throws {
        try withMigratedDatabase { _, connection in
            let runID = try connection.query(
                """
                INSERT INTO clawback.runs (scope_key, window_start, window_end, strategy, triggered_by, host)
                VALUES ('test', now() - interval '1 month', now(), 'transaction-info', 'test', 'localhost')
                RETURNING run_id
                """
            ).first?.decode(Int64.self, at: 0)
            let entryID = try connection.query(
                """
                INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, units, run_id,
                    original_transaction_id, bundle_id, environment, player_id, product_id, quantity, units_granted,
                    purchased_at)
                VALUES ('t1', 'clawback', 'refund:1', 600, \(runID), 't1', 'b', 'Production', 'p', 'gems', 1, 600, now())
                RETURNING entry_id
                """
            ).first?.decode(Int64.self, at: 0)
            let changed = try #require(throws: PostgresError.self) {
                try connection.execute("UPDATE clawback.ledger SET units = 1 WHERE entry_id = \(entryID)")
            }
            #expect(changed.sqlState == "CB010")
            // The acknowledgement goes through acknowledge_clawback, never by setting applied_at by hand.
            #expect(throws: PostgresError.self) {
                try connection.execute("UPDATE clawback.ledger SET applied_at = now(), applied_by = 'game-1' WHERE entry_id = \(entryID)")
            }
            #expect(
                try connection.query("SELECT clawback.acknowledge_clawback(\(entryID), 'game-1', 'applied')").first?.decode(Bool.self, at: 0)
                    == true)
            let deleted = try #require(throws: PostgresError.self) {
                try connection.execute("DELETE FROM clawback.ledger WHERE entry_id = \(entryID)")
            }
            #expect(deleted.sqlState == "CB010")
            // The same refund cannot be recorded twice.
            let duplicate = try #require(throws: PostgresError.self) {
                try connection.execute(
                    """
                    INSERT INTO clawback.ledger (transaction_id, kind, idempotency_key, units, run_id,
                        original_transaction_id, bundle_id, environment, player_id, product_id, quantity,
                        units_granted, purchased_at)
                    VALUES ('t1', 'clawback', 'refund:1', 600, \(runID), 't1', 'b', 'Production', 'p', 'gems', 1, 600, now())
                    """)
            }
            #expect(duplicate.isUniqueViolation)
        }
    }

    @Test("grants refuse malformed rows: unknown environment, lower-case currency, empty ids")
    func grantChecks() throws {
        try withMigratedDatabase { _, connection in
            for (environment, currency, id) in [("Staging", "USD", "x1"), ("Production", "usd", "x2"), ("Production", "USD", "")] {
                let error = try #require(throws: PostgresError.self) {
                    try connection.execute(
                        """
                        INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id,
                            environment, player_id, units_granted, currency, purchased_at)
                        VALUES (\(id), 'o', 'b', 'p', \(environment), 'pl', 1, \(currency), now())
                        """)
                }
                #expect(error.sqlState == "23514")
            }
        }
    }
}
