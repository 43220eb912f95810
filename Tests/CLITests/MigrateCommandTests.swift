import Foundation
import Postgres
import Storage
import TestSupport
import Testing

@Suite("clawback migrate, end to end")
struct MigrateCommandTests {
    @Test("migrates, reruns as a no-op, and lists the status")
    func migrateAndStatus() throws {
        try TestPostgres.withScratchDatabase { database in
            let url = try TestPostgres.connectionString(database: database)
            let first = try CommandRunner.run("clawback", ["migrate", "--database", url])
            #expect(first.status == 0, "\(first.standardError)")
            let names = Migration.embedded.map { String(format: "%04d_%@", $0.version, $0.name) }.joined(separator: ", ")
            #expect(first.standardOutput.contains("applied \(Migration.embedded.count) migration(s): \(names)"))
            #expect(first.standardOutput.contains("monthly grant partition(s)"))

            let second = try CommandRunner.run("clawback", ["migrate", "--database", url])
            #expect(second.status == 0)
            #expect(second.standardOutput.contains("schema is current"))

            let status = try CommandRunner.run("clawback", ["migrate", "--status", "--database", url])
            #expect(status.status == 0)
            let rows = status.standardOutput.split(separator: "\n").dropFirst()
            #expect(rows.count == Migration.embedded.count)
            #expect(rows.allSatisfy { $0.contains(" applied ") })
            #expect(rows.first?.hasPrefix("0001") == true)
        }
    }

    @Test("the database comes from CLAWBACK_DATABASE_URL, or from libpq's PG* variables alone")
    func databaseFromEnvironment() throws {
        try TestPostgres.withScratchDatabase { database in
            let viaVariable = try CommandRunner.run(
                "clawback", ["migrate"],
                environment: ["CLAWBACK_DATABASE_URL": try TestPostgres.connectionString(database: database)])
            #expect(viaVariable.status == 0, "\(viaVariable.standardError)")
            let viaLibpq = try CommandRunner.run(
                "clawback", ["migrate", "--status"], environment: ["PGDATABASE": database],
                removing: ["CLAWBACK_DATABASE_URL", "DATABASE_URL"])
            #expect(viaLibpq.status == 0, "\(viaLibpq.standardError)")
            #expect(viaLibpq.standardOutput.contains("applied"))
        }
    }

    @Test("a migration changed after it was applied is refused with exit 78, naming the file")
    func tampered() throws {
        try TestPostgres.withScratchDatabase { database in
            let url = try TestPostgres.connectionString(database: database)
            #expect(try CommandRunner.run("clawback", ["migrate", "--database", url]).status == 0)
            // Simulate a released file edited afterwards: the recorded checksum no longer matches it.
            let connection = try TestPostgres.connect(database: database)
            try connection.execute("UPDATE clawback.schema_migrations SET checksum = 'edited' WHERE version = 1")

            let refused = try CommandRunner.run("clawback", ["migrate", "--database", url])
            #expect(refused.status == 78)
            #expect(refused.standardError.contains("0001_init.sql was changed after it was applied"))
            let status = try CommandRunner.run("clawback", ["migrate", "--status", "--database", url])
            #expect(status.status == 78)
            #expect(status.standardOutput.contains("changed"))
        }
    }

    @Test("migrate warns of a role that can still read the ledger directly, as consumers from before 0005 could")
    func legacyConsumer() throws {
        try TestPostgres.withScratchDatabase { database in
            let url = try TestPostgres.connectionString(database: database)
            #expect(try CommandRunner.run("clawback", ["migrate", "--database", url]).status == 0)
            let role = "legacy_consumer_\(UInt32.random(in: 0..<UInt32.max))"
            let connection = try TestPostgres.connect(database: database)
            try connection.execute("CREATE ROLE \(unescaped: role) NOLOGIN")
            defer {
                _ = try? connection.execute("REVOKE ALL ON clawback.ledger FROM \(unescaped: role)")
                _ = try? connection.execute("DROP ROLE \(unescaped: role)")
            }
            let quiet = try CommandRunner.run("clawback", ["migrate", "--database", url])
            #expect(!quiet.standardOutput.contains("warning:"), "\(quiet.standardOutput)")
            try connection.execute("GRANT SELECT, UPDATE ON clawback.ledger TO \(unescaped: role)")
            let warned = try CommandRunner.run("clawback", ["migrate", "--database", url])
            #expect(warned.status == 0)
            #expect(warned.standardOutput.contains("warning: role \(role) can still read clawback.ledger directly"), "\(warned.standardOutput)")
        }
    }

    @Test("a role without privileges gets exit 77 naming the privilege and the object, not an internal error")
    func permissionDenied() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let url = try TestPostgres.connectionString(database: database)
            #expect(try await CommandRunner.run("clawback", ["migrate", "--database", url]).status == 0)
            try await TestPostgres.withRole(database: database, prefix: "no_grants") { role, asRole in
                let noSchema = try await CommandRunner.run("clawback", ["ledger", "list", "--database", asRole])
                #expect(noSchema.status == 77, "\(noSchema.standardError)")
                #expect(noSchema.standardError.contains("lacks a privilege (it needs USAGE on schema clawback)"), "\(noSchema.standardError)")
                try TestPostgres.connect(database: database).execute("GRANT USAGE ON SCHEMA clawback TO \(identifier: role)")
                let noTable = try await CommandRunner.run("clawback", ["ledger", "list", "--database", asRole])
                #expect(noTable.status == 77, "\(noTable.standardError)")
                #expect(noTable.standardError.contains("(it needs SELECT on table "), "\(noTable.standardError)")
            }
        }
    }

    @Test("a role the database refuses CONNECT exits 77 naming the privilege, not 69: the operator's to grant, not an outage to retry")
    func connectRefused() async throws {
        try await TestPostgres.withScratchDatabaseAsync { database in
            let url = try TestPostgres.connectionString(database: database)
            #expect(try await CommandRunner.run("clawback", ["migrate", "--database", url]).status == 0)
            try await TestPostgres.withRole(database: database, prefix: "no_connect") { role, asRole in
                let admin = try TestPostgres.connect(database: database)
                try admin.execute("REVOKE CONNECT ON DATABASE \(identifier: database) FROM PUBLIC")
                defer { _ = try? admin.execute("GRANT CONNECT ON DATABASE \(identifier: database) TO PUBLIC") }
                let refused = try await CommandRunner.run("clawback", ["ledger", "list", "--database", asRole])
                #expect(refused.status == 77, "\(refused.standardError)")
                #expect(refused.standardError.contains("it needs CONNECT on database"), "\(refused.standardError)")
                // Granted, the same command goes on.
                try admin.execute("GRANT CONNECT ON DATABASE \(identifier: database) TO \(identifier: role)")
                let granted = try await CommandRunner.run("clawback", ["ledger", "list", "--database", asRole])
                #expect(granted.status == 77 && granted.standardError.contains("USAGE on schema clawback"), "\(granted.standardError)")
            }
        }
    }

    @Test("a password on the command line is refused with exit 64 and is not echoed")
    func passwordRefused() throws {
        let result = try CommandRunner.run("clawback", ["migrate", "--database", "postgresql://u:hunter2@127.0.0.1/x"])
        #expect(result.status == 64)
        #expect(result.standardError.contains("must not contain a password"))
        #expect(!result.standardError.contains("hunter2"))
    }

    @Test("an unreachable database exits 69")
    func unreachable() throws {
        let port = try SilentListener.closedPort()
        let result = try CommandRunner.run("clawback", ["migrate", "--database", "postgresql://nobody@127.0.0.1:\(port)/none"])
        #expect(result.status == 69)
        #expect(result.standardError.contains("cannot connect to PostgreSQL"))
    }
}
