import Foundation
import Postgres
import Storage
import TestSupport
import Testing

@Suite("Migrations")
struct MigratorTests {
    @Test("a fresh database gets every migration, recorded with its checksum; the schema's tables exist")
    func freshApply() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            let migrator = Migrator()
            let applied = try migrator.migrate(on: connection.storage)
            #expect(applied.map(\.version) == Migration.embedded.map(\.version))
            #expect(try migrator.status(on: connection.storage).allSatisfy { $0.state == .applied })
            let recorded = try connection.query("SELECT version, checksum FROM clawback.schema_migrations ORDER BY version")
            #expect(try recorded.rows.map { try $0.decode(String.self, at: 1) } == Migration.embedded.map(\.checksum))
            for table in ["grants", "grants_default", "runs", "checks", "ledger", "settings"] {
                let exists = try connection.query("SELECT to_regclass(\("clawback." + table)) IS NOT NULL").first
                #expect(try exists?.decode(Bool.self, at: 0) == true, "clawback.\(table) is missing")
            }
        }
    }

    @Test("rerunning applies nothing and changes nothing")
    func rerunIsNoOp() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let before = try connection.query("SELECT version, applied_at FROM clawback.schema_migrations").rows.map(\.values)
            #expect(try Migrator().migrate(on: connection.storage).isEmpty)
            let after = try connection.query("SELECT version, applied_at FROM clawback.schema_migrations").rows.map(\.values)
            #expect(before == after)
        }
    }

    @Test("a migration file changed after it was applied is refused, and nothing else is applied")
    func tamperedRefused() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            let original = [Migration(version: 1, name: "one", sql: "CREATE TABLE clawback.one (id int);")]
            try Migrator(migrations: original).migrate(on: connection.storage)
            let tampered = [
                Migration(version: 1, name: "one", sql: "CREATE TABLE clawback.one (id bigint);"),
                Migration(version: 2, name: "two", sql: "CREATE TABLE clawback.two (id int);"),
            ]
            let error = try #require(throws: MigrationError.self) { try Migrator(migrations: tampered).migrate(on: connection.storage) }
            guard case .changedAfterApply(let version, _, _, _) = error else {
                Issue.record("expected changedAfterApply, got \(error)")
                return
            }
            #expect(version == 1)
            #expect(error.description.contains("0001_one.sql was changed after it was applied"))
            #expect(try Migrator(migrations: tampered).status(on: connection.storage).map(\.state) == [.changed, .pending])
            #expect(try connection.query("SELECT to_regclass('clawback.two') IS NULL").first?.decode(Bool.self, at: 0) == true)
        }
    }

    @Test("a database that recorded 0001 before its comments were revised is current, and its record is brought up to date")
    func revisedComments() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let earlier = "5ed694fce39c52fe9e6f602b5e90b5a42eef6a180737072b136f55e6dff51936"
            try connection.execute("UPDATE clawback.schema_migrations SET checksum = \(earlier) WHERE version = 1")
            #expect(try Migrator().status(on: connection.storage).allSatisfy { $0.state == .applied })
            #expect(try Migrator().migrate(on: connection.storage).isEmpty)
            let current = try #require(Migrator().migrations.first { $0.version == 1 }).checksum
            #expect(
                try connection.query("SELECT checksum FROM clawback.schema_migrations WHERE version = 1").first?.decode(String.self, at: 0) == current
            )
            // Any other text is still refused.
            try connection.execute("UPDATE clawback.schema_migrations SET checksum = 'feedface' WHERE version = 1")
            #expect(throws: MigrationError.self) { try Migrator().migrate(on: connection.storage) }
        }
    }

    @Test("a database migrated by a newer clawback is refused by an older one")
    func newerDatabase() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            let newer = [
                Migration(version: 1, name: "one", sql: "SELECT 1;"), Migration(version: 2, name: "two", sql: "SELECT 2;"),
            ]
            try Migrator(migrations: newer).migrate(on: connection.storage)
            let older = Migrator(migrations: Array(newer.prefix(1)))
            #expect(throws: MigrationError.self) { try older.migrate(on: connection.storage) }
            #expect(try older.status(on: connection.storage).map(\.state) == [.applied, .unknown])
        }
    }

    @Test("a failing migration is rolled back whole and not recorded")
    func failingMigration() throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            let broken = [Migration(version: 1, name: "broken", sql: "CREATE TABLE clawback.half (id int); SELECT nope;")]
            #expect(throws: PostgresError.self) { try Migrator(migrations: broken).migrate(on: connection.storage) }
            #expect(try connection.query("SELECT to_regclass('clawback.half') IS NULL").first?.decode(Bool.self, at: 0) == true)
            #expect(try connection.query("SELECT count(*) FROM clawback.schema_migrations").first?.decode(Int.self, at: 0) == 0)
        }
    }

    @Test("two migrators racing on one database apply each migration exactly once")
    func concurrentMigrators() throws {
        try TestPostgres.withScratchDatabase { database in
            // Each thread opens its own connection: connections are not shared across threads.
            let boxes = (0..<2).map { _ in
                let box = ResultBox()
                let thread = Thread {
                    box.set(Result { try Migrator().migrate(on: try TestPostgres.connect(database: database).storage).count })
                }
                thread.start()
                return box
            }
            let results = try boxes.map { try $0.wait().get() }
            #expect(results.reduce(0, +) == Migration.embedded.count)
            let connection = try TestPostgres.connect(database: database)
            #expect(
                try connection.query("SELECT count(*) FROM clawback.schema_migrations").first?.decode(Int.self, at: 0)
                    == Migration.embedded.count)
        }
    }
}

/// Carries a thread's result back to the test (blocking wait; tests only).
final class ResultBox: @unchecked Sendable {
    private let condition = NSCondition()
    private var result: Result<Int, any Error>?

    func set(_ value: Result<Int, any Error>) {
        condition.lock()
        result = value
        condition.signal()
        condition.unlock()
    }

    func wait() -> Result<Int, any Error> {
        condition.lock()
        defer { condition.unlock() }
        while result == nil { condition.wait() }
        return result ?? .failure(CancellationError())
    }
}
