import AppStoreSimulator
import Crypto
import Foundation
import Job
import Postgres
import Reconciliation
import Storage
import StripeDriver
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `clawback run` as cron runs it: the real binary against PostgreSQL and the simulator over loopback.
@Suite("clawback run, end to end", .serialized)
struct RunCrashTests {
    /// A simulator serving `purchases` generated App Store purchases (and a Google Play world beside them,
    /// or alone), and a configuration file pointing at it: what every end-to-end test of the binary runs.
    struct Setup {
        let server: SimulatorServer
        let output: WorldGenerator.Output
        /// The Google Play world served beside Apple's, its grants imported and its app configured.
        let google: GooglePlayWorldGenerator.Output?
        /// A web shop's Stripe world served beside them, likewise.
        var stripe: StripeWorldGenerator.Output? = nil
        let directory: URL
        let from: String
        let to: String

        var configPath: String { directory.appendingPathComponent("clawback.yaml").path }

        /// `apple` adds keys to the configuration's apple section (e.g. `timeout_seconds: 2`).
        /// `days`: how far back the purchases go. `google`: a Google Play world served beside Apple's, its
        /// grants imported with Apple's and its app configured.
        static func make(
            purchases: Int, seed: UInt64, bundles: [String]? = nil, apple: [String] = [], sandboxShare: Double = 0, days: Double = 50,
            google: GooglePlayWorldGenerator.Output? = nil, stripe: StripeWorldGenerator.Output? = nil
        ) async throws -> Setup {
            let now = Date()
            var options = WorldGenerator.Options(start: now - 86_400 * days, end: now - 86_400, now: now)
            options.purchases = purchases
            options.refundRate = 0.05
            options.reversalShare = 0
            options.sandboxShare = sandboxShare
            options.seed = seed
            if let bundles { options.bundleIDs = bundles }
            let output = WorldGenerator.generate(options)
            let chain = try SigningChain()
            let simulator = Simulator(
                world: output.world, chain: chain, configuration: .init(rateLimits: nil), google: google?.world, stripe: stripe?.world)
            let server = try await SimulatorServer.start(simulator: simulator, threads: 1)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-crash-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try GeneratedFiles.write(output, to: directory.path)
            try chain.rootPEM().write(to: directory.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
            var apps = try String(contentsOf: directory.appendingPathComponent("clawback-apps.yaml"), encoding: .utf8)
            if let google {
                apps += "\n" + (try writeGoogleApp(google, to: directory, grantsFile: "google-grants.jsonl", port: server.port))
            }
            if let stripe {
                apps += "\n" + (try writeStripeShop(stripe, to: directory, grantsFile: "stripe-grants.jsonl", port: server.port))
            }
            try """
            apple:
              production_url: http://127.0.0.1:\(server.port)
              sandbox_url: http://127.0.0.1:\(server.port)/sandbox
              trusted_roots: [root.pem]
              rate_limits: {transaction_info: 100000}
              concurrency: 16
            \(apple.map { "  " + $0 + "\n" }.joined())run:
              batch_size: 100
            reports:
              directory: reports
            \(apps)
            """.write(to: directory.appendingPathComponent("clawback.yaml"), atomically: true, encoding: .utf8)
            let day = ISO8601DateFormatter()
            day.formatOptions = [.withFullDate]
            return Setup(
                server: server, output: output, google: google, stripe: stripe, directory: directory,
                from: day.string(from: now - 86_400 * (days + 10)), to: day.string(from: now + 86_400 * 2))
        }

        /// A Google Play world of `orders` alone (no App Store purchase), its pending refunds settled so that a
        /// run can finish.
        static func make(googleOrders orders: Int, seed: UInt64) async throws -> Setup {
            let now = Date()
            var google = try GooglePlayWorldGenerator.generate(
                orders: orders, start: now - 86_400 * 50, end: now - 86_400, refundRate: 0.1, unknownShare: 0.002, seed: seed)
            for (id, order) in google.world.orders where order.state == "PENDING_REFUND" { google.world.orders[id]?.state = "PROCESSED" }
            return try await make(purchases: 0, seed: seed, google: google)
        }

        /// The world's service account key (`google.json`, 0600) and its grants as `clawback grants import`
        /// reads them, into `directory`; returns the configuration's `google` and `google_apps` sections for
        /// the simulator on `port`.
        static func writeGoogleApp(_ output: GooglePlayWorldGenerator.Output, to directory: URL, grantsFile: String, port: Int) throws -> String {
            #expect(
                FileManager.default.createFile(
                    atPath: directory.appendingPathComponent("google.json").path, contents: output.keyFile,
                    attributes: [.posixPermissions: 0o600]))
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            try output.grants.map { String(decoding: try encoder.encode($0), as: UTF8.self) }.joined(separator: "\n")
                .write(to: directory.appendingPathComponent(grantsFile), atomically: true, encoding: .utf8)
            return """
                google:
                  api_url: http://127.0.0.1:\(port)
                  token_url: http://127.0.0.1:\(port)/google/token
                google_apps:
                  - package_name: \(GooglePlayWorldGenerator.packageName)
                    service_account_key_file: google.json

                """
        }

        /// The world's restricted key (`stripe.key`, 0600) and its grants as `clawback grants import` reads them,
        /// into `directory`; returns the configuration's `stripe` section for the simulator on `port`.
        static func writeStripeShop(_ output: StripeWorldGenerator.Output, to directory: URL, grantsFile: String, port: Int) throws -> String {
            let key = try #require(output.world.keys.first)
            #expect(
                FileManager.default.createFile(
                    atPath: directory.appendingPathComponent("stripe.key").path, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]))
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            try output.grants.map { String(decoding: try encoder.encode($0), as: UTF8.self) }.joined(separator: "\n")
                .write(to: directory.appendingPathComponent(grantsFile), atomically: true, encoding: .utf8)
            let shop = try #require(output.grants.first?.bundle_id)
            return """
                stripe:
                  api_key_file: stripe.key
                  api_url: http://127.0.0.1:\(port)
                  shops:
                    - name: \(shop)

                """
        }

        /// The Google Play grants the setup imports (none without a Google world).
        var googleGrants: [GooglePlayWorldGenerator.GoogleGrantLine] { google?.grants ?? [] }

        /// Google Play's monthly run over the setup's window, writing its reports into `reports`.
        func googleArguments(reports: String) -> [String] {
            [
                "run", "--strategy", "google-orders", "--from", from, "--to", to, "--log-level", "warning", "--report-dir",
                directory.appendingPathComponent(reports).path,
            ]
        }

        func prepare(database: String) throws {
            try prepare(on: try TestPostgres.connect(database: database))
        }

        func prepare(on connection: PostgresConnection) throws {
            try Migrator().migrate(on: connection.storage)
            let outcome = try GrantImport.importJSONLines(
                try Data(contentsOf: directory.appendingPathComponent("grants.jsonl")), skipInvalid: false, on: connection.storage)
            precondition(outcome.inserted == output.grants.count)
            for file in ["google-grants.jsonl", "stripe-grants.jsonl"] {
                let grants = directory.appendingPathComponent(file)
                guard FileManager.default.fileExists(atPath: grants.path) else { continue }
                // The grants' store is known to this process as the binary knows it: by its driver.
                StoreDrivers.register(StripeDriver())
                let outcome = try GrantImport.importJSONLines(try Data(contentsOf: grants), skipInvalid: false, on: connection.storage)
                #expect(outcome.invalid.isEmpty, "\(file): \(outcome.invalid.prefix(3))")
            }
        }

        func environment(database: String) throws -> [String: String] {
            ["CLAWBACK_CONFIG": configPath, "CLAWBACK_DATABASE_URL": try TestPostgres.connectionString(database: database)]
        }

        var arguments: [String] { ["run", "--from", from, "--to", to, "--log-level", "warning"] }

        func stop() async {
            await server.stop()
            try? FileManager.default.removeItem(at: directory)
        }

        /// A setup for the length of `body`: made, handed over, and stopped (simulator and files) when the body
        /// returns or throws, awaited, so no simulator outlives its test.
        static func with<T>(
            purchases: Int, seed: UInt64, bundles: [String]? = nil, apple: [String] = [], sandboxShare: Double = 0, days: Double = 50,
            google: GooglePlayWorldGenerator.Output? = nil, _ body: (Setup) async throws -> T
        ) async throws -> T {
            try await scoped(
                try await make(
                    purchases: purchases, seed: seed, bundles: bundles, apple: apple, sandboxShare: sandboxShare, days: days, google: google),
                stop: { await $0.stop() },
                body)
        }
    }

    /// What must be identical after any number of crashes: every ledger entry and every check's verdict (in
    /// the checks table or a check page).
    static func snapshot(database: String) throws -> (ledger: [String], checks: [String], runs: Int, attempts: Int) {
        try snapshot(on: try TestPostgres.connect(database: database))
    }

    static func snapshot(on connection: PostgresConnection) throws -> (ledger: [String], checks: [String], runs: Int, attempts: Int) {
        let ledger = try connection.query(
            "SELECT transaction_id || '|' || kind || '|' || units || '|' || idempotency_key FROM clawback.ledger ORDER BY 1"
        ).rows.map { try $0.decode(String.self, at: 0) }
        let checks = try connection.query(
            "SELECT transaction_id || '|' || verdict || '|' || units_clawed_back FROM clawback.run_checks ORDER BY 1"
        ).rows.map { try $0.decode(String.self, at: 0) }
        let runs = try connection.query("SELECT count(*), coalesce(max(attempts), 0) FROM clawback.runs").first
        return (ledger, checks, try runs?.decode(Int.self, at: 0) ?? 0, try runs?.decode(Int.self, at: 1) ?? 0)
    }

    @Test(
        "SIGKILL at random points of a run (20,000 grants, 5 kills; CLAWBACK_FAULTS=long: 100,000 and 20), resumed each time, ends exactly like an uninterrupted run"
    )
    func crashAndResume() async throws {
        let grants = FaultScale.pick(short: 20_000, long: 100_000)
        let kills = FaultScale.pick(short: 5, long: 20)
        try await Setup.with(purchases: grants, seed: 11) { setup in
            func arguments(_ reports: String) -> [String] {
                setup.arguments + ["--report-dir", setup.directory.appendingPathComponent(reports).path]
            }
            let expected = try await CrashPointTests.EndState.uninterrupted(setup)
            #expect(expected.checks.count == grants)
            #expect(expected.ledger.count > grants / 25)

            try await TestPostgres.withScratchDatabaseAsync { crashed in
                try setup.prepare(database: crashed)
                var random = SeededGenerator(seed: 99)
                let monitor = try TestPostgres.connect(database: crashed)
                func checked() throws -> Int {
                    try monitor.query("SELECT count(*) FROM clawback.checks").first?.decode(Int.self, at: 0) ?? 0
                }
                for round in 0..<kills {
                    let before = try checked()
                    let process = try ChildProcess.start("clawback", arguments("crashed"), environment: try setup.environment(database: crashed))
                    // Every kill lands mid-run: after this attempt has committed something, at a random point
                    // after that (inside the next batch, its commit, or between batches).
                    let deadline = ContinuousClock.now + .seconds(60)
                    while try checked() == before && process.isRunning && ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(10))
                    }
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 0...Int64(grants / 100), using: &random)))
                    #expect(process.isRunning, "round \(round): the run finished before it could be killed")
                    kill(process.processIdentifier, SIGKILL)
                    try await process.waitUntilExit(thenForSessionsOn: crashed)
                    #expect(process.terminationReason == .uncaughtSignal)
                }
                #expect(try checked() < grants, "the kills came too late to interrupt anything")
                let final = try await CommandRunner.run("clawback", arguments("crashed"), environment: try setup.environment(database: crashed))
                #expect(final.status == 0, "\(final.standardError)")
                #expect(final.standardOutput.contains("resumed"))
                let actual = try CrashPointTests.EndState.read(database: crashed, reports: setup.directory.appendingPathComponent("crashed"))
                #expect(actual == expected)
                #expect(Set(actual.ledger).count == actual.ledger.count, "a ledger entry was written twice")
                // One attempt per invocation that checked; the last kill may land after the run committed (while
                // its reports were written), and the final invocation then only finishes it, as no new attempt.
                #expect((kills...kills + 1).contains(try Self.snapshot(database: crashed).attempts))
            }
        }
    }

    @Test("SIGTERM stops at a batch boundary: exit 75, the run marked interrupted, the next invocation resumes it")
    func sigterm() async throws {
        try await Setup.with(purchases: 5_000, seed: 13) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let monitor = try TestPostgres.connect(database: database)
                func checked() throws -> Int { try monitor.query("SELECT count(*) FROM clawback.checks").first?.decode(Int.self, at: 0) ?? 0 }
                let process = try ChildProcess.start("clawback", setup.arguments, environment: try setup.environment(database: database))
                let deadline = ContinuousClock.now + .seconds(60)
                while try checked() == 0 && process.isRunning && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
                #expect(process.isRunning)
                kill(process.processIdentifier, SIGTERM)
                process.waitUntilExit()
                #expect(process.terminationReason == .exit)
                #expect(process.terminationStatus == 75)
                let partial = try checked()
                #expect(partial > 0 && partial < 5_000)
                // Nothing half-written: every check that created a ledger entry has it (checks and entries commit together).
                let orphans = try monitor.query(
                    """
                    SELECT count(*) FROM clawback.checks c
                    WHERE c.action IN ('clawback_created', 'adjustment_created', 'reversal_created', 'flagged_for_review')
                      AND NOT EXISTS (SELECT 1 FROM clawback.ledger l WHERE l.transaction_id = c.transaction_id)
                    """
                ).first?.decode(Int.self, at: 0)
                #expect(orphans == 0)
                #expect(try monitor.query("SELECT status FROM clawback.runs").first?.decode(String.self, at: 0) == "interrupted")

                let resumed = try await CommandRunner.run("clawback", setup.arguments, environment: try setup.environment(database: database))
                #expect(resumed.status == 0, "\(resumed.standardError)")
                #expect(resumed.standardOutput.contains("resumed, attempt 2"))
                #expect(try checked() == 5_000)
            }
        }
    }

    @Test("--shards N takes the shard from $JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs); a bad index is a usage error")
    func indexedJob() async throws {
        try await Setup.with(purchases: 200, seed: 14) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                var checked = 0
                for index in 0..<2 {
                    var environment = try setup.environment(database: database)
                    environment["JOB_COMPLETION_INDEX"] = String(index)
                    let result = try CommandRunner.run("clawback", setup.arguments + ["--shards", "2", "--json"], environment: environment)
                    #expect(result.status == 0, "\(result.standardError)")
                    let summary = try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any]
                    #expect(summary?["shard"] as? String == "\(index)/2")
                    checked += ((summary?["counters"] as? [String: Any])?["checked"] as? Int) ?? 0
                }
                #expect(checked == 200)
                var bad = try setup.environment(database: database)
                bad["JOB_COMPLETION_INDEX"] = "2"
                #expect(try CommandRunner.run("clawback", setup.arguments + ["--shards", "2"], environment: bad).status == 64)
            }
        }
    }

    @Test("a run over a scope whose lock is held exits 85 and names the holder")
    func lockExitCode() async throws {
        try await Setup.with(purchases: 50, seed: 12) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let window = try ReconciliationWindow(start: try ReconciliationWindow.date(setup.from), end: try ReconciliationWindow.date(setup.to))
                let scope = RunScope(selection: GrantSelection(window: window), strategy: .transactionInfo, dryRun: false)
                let holder = try TestPostgres.connect(database: database)
                try holder.query("SELECT pg_advisory_lock(\(scope.lockKey.value))")
                let locked = try await CommandRunner.run("clawback", setup.arguments, environment: try setup.environment(database: database))
                #expect(locked.status == 85)
                #expect(locked.standardError.contains("another run holds the lock"))
                #expect(locked.standardError.contains("pid \(holder.backendPID)"))
                holder.close()
                try await TestPostgres.waitUntilUnlocked(scope.lockKey, database: database)
                let free = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--json"], environment: try setup.environment(database: database))
                #expect(free.status == 0, "\(free.standardError)")
                let summary = try JSONSerialization.jsonObject(with: Data(free.standardOutput.utf8)) as? [String: Any]
                #expect(summary?["status"] as? String == "succeeded")
            }
        }
    }
}
