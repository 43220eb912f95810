import Foundation
import Postgres
import Storage
import TestSupport
import Testing

/// What a new operator meets first: a database nobody migrated yet, a database that is not there, a
/// configuration with a mistake, a database migrated by a newer clawback. Every subcommand must answer each
/// with a code from the documented table, and the commonest one with what to do.
@Suite("first contact: every subcommand against an unmigrated, unreachable or newer database and a broken configuration", .serialized)
struct FirstContactTests {
    /// Every subcommand that needs the database, with arguments that are valid apart from the database.
    static func commands(grantsFile: String) -> [[String]] {
        [
            ["run", "--month", "2026-10"],
            ["runs"],
            ["report", "--run", "1"],
            ["report", "--month", "2026-10"],
            ["prune", "--dry-run"],
            ["grants", "import", grantsFile],
            ["ledger", "list"],
            ["ledger", "show", "1"],
            ["ledger", "pending"],
            ["ledger", "waive", "1", "--by", "ana", "--reason", "goodwill"],
            ["refund-requests", "answer"],
            ["refund-requests", "show", "2000000000000001"],
        ]
    }

    /// The exit codes of docs/operations.md's table.
    static func documentedExitCodes() throws -> Set<Int32> {
        let operations = try DocumentationTests.read("docs/operations.md")
        let section = try #require(operations.components(separatedBy: "\n## Exit codes\n").dropFirst().first)
        let row = try Regex(#"(?m)^\| (\d+) \|"#)
        return Set(section.matches(of: row).compactMap { $0.output[1].substring.flatMap { Int32($0) } })
    }

    @Test("a database never migrated: every subcommand but migrate exits 78 and says to run `clawback migrate`; config check says it too")
    func unmigrated() async throws {
        try await RunCrashTests.Setup.with(purchases: 5, seed: 41) { setup in
            let grants = setup.directory.appendingPathComponent("grants.jsonl").path
            try await TestPostgres.withScratchDatabaseAsync { database in
                let environment = try setup.environment(database: database)
                for command in Self.commands(grantsFile: grants) {
                    let result = try await CommandRunner.run("clawback", command, environment: environment)
                    #expect(result.status == 78, "\(command): \(result.status) \(result.standardError)")
                    #expect(
                        result.standardError.contains("the database is not migrated: run `clawback migrate`"), "\(command): \(result.standardError)")
                }
                let check = try await CommandRunner.run("clawback", ["config", "check"], environment: environment)
                #expect(check.status == 78)
                #expect(check.standardOutput.contains("run clawback migrate"), "\(check.standardOutput)")
                // Nothing was created behind the operator's back: the schema is still absent.
                let schema = try TestPostgres.connect(database: database).query("SELECT to_regnamespace('clawback') IS NULL").first?.decode(
                    Bool.self, at: 0)
                #expect(schema == true)

                // Once migrated, the same commands get past the schema check.
                let migrate = try await CommandRunner.run("clawback", ["migrate"], environment: environment)
                #expect(migrate.status == 0, "\(migrate.standardError)")
                let runs = try await CommandRunner.run("clawback", ["runs"], environment: environment)
                #expect(runs.status == 0, "\(runs.standardError)")
            }
        }
    }

    @Test("a database migrated by a newer clawback: refused with exit 78, naming the upgrade; half-migrated: the pending ones named")
    func newerAndPartial() async throws {
        try await RunCrashTests.Setup.with(purchases: 5, seed: 42) { setup in
            let grants = setup.directory.appendingPathComponent("grants.jsonl").path
            try await TestPostgres.withScratchDatabaseAsync { database in
                let environment = try setup.environment(database: database)
                let connection = try TestPostgres.connect(database: database)
                try Migrator().migrate(on: connection.storage)
                try connection.execute(
                    "INSERT INTO clawback.schema_migrations (version, name, checksum) VALUES (9999, 'from_the_future', 'x')")
                for command in Self.commands(grantsFile: grants) {
                    let result = try await CommandRunner.run("clawback", command, environment: environment)
                    #expect(result.status == 78, "\(command): \(result.status) \(result.standardError)")
                    #expect(
                        result.standardError.contains("migrated by a newer clawback (9999_from_the_future"), "\(command): \(result.standardError)")
                }
                let migrate = try await CommandRunner.run("clawback", ["migrate"], environment: environment)
                #expect(migrate.status == 78, "\(migrate.standardError)")

                let last = try #require(Migration.embedded.map(\.version).max())
                try connection.execute("DELETE FROM clawback.schema_migrations WHERE version IN (9999, \(last))")
                let result = try await CommandRunner.run("clawback", ["runs"], environment: environment)
                #expect(result.status == 78)
                #expect(result.standardError.contains(String(format: "pending: %04d_", last)), "\(result.standardError)")
            }
        }
    }

    @Test("PostgreSQL failing after the connection (every statement cancelled by its timeout): every subcommand exits 69, ledger list too")
    func failureAfterConnecting() async throws {
        try await RunCrashTests.Setup.with(purchases: 5, seed: 44) { setup in
            let grants = setup.directory.appendingPathComponent("grants.jsonl").path
            try await TestPostgres.withScratchDatabaseAsync { database in
                let environment = try setup.environment(database: database)
                try Migrator().migrate(on: try TestPostgres.connect(database: database).storage)
                // Every table but the migrations' (so the schema check passes) is locked by a transaction left open:
                // each command connects, passes the check, and its first statement of its own waits until cancelled.
                let blocker = try TestPostgres.connect(database: database)
                let tables = try blocker.query(
                    """
                    SELECT string_agg(format('%I.%I', schemaname, tablename), ', ') FROM pg_tables
                    WHERE schemaname = 'clawback' AND tablename <> 'schema_migrations' AND tablename NOT LIKE 'grants\\_%'
                    """
                ).first?.decode(String.self, at: 0)
                try blocker.executeScript(unsafeSQL: "BEGIN; LOCK TABLE \(try #require(tables)) IN ACCESS EXCLUSIVE MODE")
                for command in Self.commands(grantsFile: grants) {
                    let result = try await CommandRunner.run("clawback", command + ["--statement-timeout", "1"], environment: environment)
                    #expect(result.status == 69, "\(command): \(result.status) \(result.standardError)")
                    #expect(
                        result.standardError.contains("57014") || result.standardError.contains("statement timeout"),
                        "\(command): \(result.standardError)")
                }
                try blocker.executeScript(unsafeSQL: "ROLLBACK")
            }
        }
    }

    @Test("an unreachable database and a broken configuration: every subcommand exits with a documented code (69, 78), never 1")
    func unreachableAndBroken() async throws {
        try await RunCrashTests.Setup.with(purchases: 5, seed: 43) { setup in
            let documented = try Self.documentedExitCodes()
            let grants = setup.directory.appendingPathComponent("grants.jsonl").path
            let port = try SilentListener.closedPort()
            let unreachable = ["CLAWBACK_CONFIG": setup.configPath, "CLAWBACK_DATABASE_URL": "postgresql://nobody@127.0.0.1:\(port)/none"]
            let broken = setup.directory.appendingPathComponent("broken.yaml").path
            try "run:\n  window_months: twelve\nno_such_section: {}\n".write(toFile: broken, atomically: true, encoding: .utf8)
            for command in Self.commands(grantsFile: grants) + [["migrate"], ["config", "check"]] {
                let down = try await CommandRunner.run("clawback", command, environment: unreachable)
                #expect(down.status == (command == ["config", "check"] ? 78 : 69), "\(command): \(down.status) \(down.standardError)")
                #expect(documented.contains(down.status))
                let bad = try await CommandRunner.run(
                    "clawback", command, environment: ["CLAWBACK_CONFIG": broken] + unreachable.filter { $0.key != "CLAWBACK_CONFIG" })
                #expect(bad.status == 78, "\(command): \(bad.status) \(bad.standardError)")
                #expect(bad.standardError.contains("no_such_section") || bad.standardOutput.contains("no_such_section"), "\(command)")
            }
        }
    }
}

extension Dictionary {
    fileprivate static func + (lhs: Self, rhs: Self) -> Self { lhs.merging(rhs) { _, new in new } }
}
