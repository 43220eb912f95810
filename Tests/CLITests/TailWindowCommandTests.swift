import Foundation
import Postgres
import Storage
import TestSupport
import Testing

@Suite("clawback prune, grants import and the tail window settings, end to end")
struct TailWindowCommandTests {
    func write(_ text: String, to name: String, in directory: URL) throws -> String {
        let url = directory.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url.path
    }

    @Test("migrate writes the configured tail window; import loads CSV; prune --dry-run shows, prune drops")
    func tailWindowCommands() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-tail-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try TestPostgres.withScratchDatabase { database in
            let config = try write("tail_window:\n  acceptance_window_days: 45\n  grant_retention_months: 5\n", to: "clawback.yaml", in: directory)
            let environment = ["CLAWBACK_CONFIG": config, "CLAWBACK_DATABASE_URL": try TestPostgres.connectionString(database: database)]
            let migrate = try CommandRunner.run("clawback", ["migrate"], environment: environment)
            #expect(migrate.status == 0, "\(migrate.standardError)")
            #expect(migrate.standardOutput.contains("purchases accepted for 45 days, grants kept 5 months"))
            let connection = try TestPostgres.connect(database: database)
            let settings = try #require(
                try connection.query(
                    "SELECT acceptance_window = interval '45 days', retention = interval '5 months' FROM clawback.settings"
                ).first)
            #expect(try settings.decode(Bool.self, at: 0) && settings.decode(Bool.self, at: 1))

            // A year-old grant (history from another system) and a recent one.
            let old = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-365 * 86_400))
            let recent = ISO8601DateFormatter().string(from: Date().addingTimeInterval(-86_400))
            let csv = try write(
                "transaction_id,bundle_id,product_id,player_id,units_granted,purchased_at\nold-1,b,p,x,1,\(old)\nnew-1,b,p,y,1,\(recent)\n",
                to: "grants.txt", in: directory)
            let unknown = try CommandRunner.run("clawback", ["grants", "import", csv], environment: environment)
            #expect(unknown.status == 64)
            #expect(unknown.standardError.contains("give --format jsonl or --format csv"))
            let imported = try CommandRunner.run("clawback", ["grants", "import", csv, "--format", "csv"], environment: environment)
            #expect(imported.status == 0, "\(imported.standardError)")
            #expect(imported.standardOutput.contains("imported 2 new grant(s)"))

            let oldMonth = String(old.prefix(7)).replacingOccurrences(of: "-", with: "_")
            let preview = try CommandRunner.run("clawback", ["prune", "--dry-run"], environment: environment)
            #expect(preview.status == 0, "\(preview.standardError)")
            #expect(preview.standardOutput.contains("DRY RUN: nothing changed"))
            #expect(preview.standardOutput.contains("grants_\(oldMonth)"))
            #expect(preview.standardOutput.contains(" partition(s): 1 grants,") && preview.standardOutput.contains("would drop"))
            #expect(try connection.query("SELECT count(*) FROM clawback.grants").first?.decode(Int.self, at: 0) == 2)

            let prune = try CommandRunner.run("clawback", ["prune"], environment: environment)
            #expect(prune.status == 0, "\(prune.standardError)")
            #expect(prune.standardOutput.contains(" partition(s): 1 grants,") && prune.standardOutput.contains("dropped"))
            #expect(try connection.query("SELECT transaction_id FROM clawback.grants").rows.map { try $0.decode(String.self, at: 0) } == ["new-1"])

            // Holding the prune lock: a second prune exits 85.
            try connection.execute("SELECT pg_advisory_lock(\(GrantPruner.lockKey.value))")
            let busy = try CommandRunner.run("clawback", ["prune"], environment: environment)
            #expect(busy.status == 85)
            #expect(busy.standardError.contains("another prune is running"))
        }
    }

    @Test("a retention shorter than the reconciliation window is refused with exit 78 naming the field")
    func shortRetentionRefused() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-tail-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let config = try write("tail_window: {grant_retention_months: 2}\n", to: "clawback.yaml", in: directory)
        let result = try CommandRunner.run("clawback", ["prune", "--dry-run"], environment: ["CLAWBACK_CONFIG": config])
        #expect(result.status == 78)
        #expect(result.standardError.contains("tail_window.grant_retention_months"))
    }
}

@Suite("clawback run and the tail window", .serialized)
struct RunPruneTests {
    /// One grant in a month long past retention, one outside every partition (in the default partition).
    func plantOldGrants(database: String) throws -> String {
        let connection = try TestPostgres.connect(database: database)
        let month = try #require(
            try connection.query(
                "SELECT date_trunc('month', now() AT TIME ZONE 'UTC' - interval '9 months') AT TIME ZONE 'UTC'"
            ).first
        ).decode(Date.self, at: 0)
        try connection.query("SELECT clawback.ensure_grant_partitions(\(month), \(month.addingTimeInterval(86_400)))")
        for (id, date) in [("old-grant", month.addingTimeInterval(3600)), ("stray-grant", Date(timeIntervalSince1970: 978_307_200))] {
            try connection.execute(
                """
                INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id,
                    units_granted, purchased_at)
                VALUES (\(id), \(id), 'com.studio.game', 'gems_600', 'Production', 'p', 600, \(date))
                """)
        }
        return try #require(
            try connection.query("SELECT tableoid::regclass::text FROM clawback.grants WHERE transaction_id = 'old-grant'").first
        ).decode(String.self, at: 0)
    }

    func exists(_ table: String, database: String) throws -> Bool {
        try #require(try TestPostgres.connect(database: database).query("SELECT to_regclass(\(table)) IS NOT NULL").first)
            .decode(Bool.self, at: 0)
    }

    @Test("a successful run prunes old partitions (unless prune_after_run is false) and reports the default partition")
    func runPrunes() async throws {
        try await RunCrashTests.Setup.with(purchases: 200, seed: 8) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let oldPartition = try plantOldGrants(database: database)
                #expect(oldPartition.hasPrefix("clawback.grants_"))
                let metrics = setup.directory.appendingPathComponent("clawback.prom").path
                let run = try CommandRunner.run(
                    "clawback", setup.arguments + ["--metrics-file", metrics],
                    environment: try setup.environment(database: database))
                #expect(run.status == 0, "\(run.standardError)")
                #expect(run.standardError.contains("grants outside every monthly partition"))
                #expect(try !exists(oldPartition, database: database))
                let text = try String(contentsOfFile: metrics, encoding: .utf8)
                #expect(text.contains("clawback_grants_default_partition_rows 1"))
            }

            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: setup.configPath))
            try handle.seekToEnd()
            try handle.write(contentsOf: Data("\ntail_window: {prune_after_run: false}\n".utf8))
            try handle.close()
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let oldPartition = try plantOldGrants(database: database)
                let run = try CommandRunner.run("clawback", setup.arguments, environment: try setup.environment(database: database))
                #expect(run.status == 0, "\(run.standardError)")
                #expect(try exists(oldPartition, database: database))
            }
        }
    }
}
