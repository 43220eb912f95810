import AppStoreDriver
import AppStoreSimulator
import Foundation
import GooglePlayDriver
import Job
import Postgres
import Storage
import StripeDriver
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `clawback run --strategy stripe-payments` as cron runs it: the real binary, registering Stripe's driver
/// itself, against PostgreSQL and the simulator's Stripe side over loopback with 429s and 500s, killed at
/// random batch commits (its own crash points) and resumed: the ledger and the checks end exactly as an
/// uninterrupted run leaves them.
@Suite("clawback run --strategy stripe-payments, end to end", .serialized)
struct StripeRunCrashTests {
    struct Setup {
        let server: SimulatorServer
        let output: StripeWorldGenerator.Output
        let directory: URL

        static func make(payments: Int, seed: UInt64) async throws -> Setup {
            let now = Date()
            let output = StripeWorldGenerator.generate(
                payments: payments, start: now - 50 * 86_400, end: now - 86_400, shop: "web.studio.game", refundRate: 0.1, disputeRate: 0.05,
                unknownShare: 0.005, key: "rk_live_crash", seed: seed)
            let simulator = Simulator(world: World(apps: [], transactions: []), chain: try SigningChain(), stripe: output.world)
            simulator.stripe?.setFaults(StripeFaults(rateLimitedShare: 0.025, serverErrorShare: 0.025))
            let server = try await SimulatorServer.start(simulator: simulator, threads: 1)
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-stripe-crash-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let keyFile = directory.appendingPathComponent("stripe.key").path
            guard FileManager.default.createFile(atPath: keyFile, contents: Data("rk_live_crash".utf8), attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteUnknown)
            }
            try """
            stripe:
              api_key_file: \(keyFile)
              api_url: http://127.0.0.1:\(server.port)
              shops:
                - name: web.studio.game
            """.write(to: directory.appendingPathComponent("clawback.yaml"), atomically: true, encoding: .utf8)
            return Setup(server: server, output: output, directory: directory)
        }

        func prepare(database: String) throws {
            // The grants' store is known to this process as the binary knows it: by its driver.
            StoreDrivers.register(StripeDriver())
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            var lines = Data()
            for grant in output.grants { lines += try encoder.encode(grant) + Data("\n".utf8) }
            let outcome = try GrantImport.importJSONLines(lines, skipInvalid: false, on: connection.storage)
            #expect(outcome.inserted == output.grants.count, "\(outcome.invalid.prefix(3))")
        }

        func environment(database: String) throws -> [String: String] {
            [
                "CLAWBACK_CONFIG": directory.appendingPathComponent("clawback.yaml").path,
                "CLAWBACK_DATABASE_URL": try TestPostgres.connectionString(database: database),
            ]
        }

        /// The payments' span (the last 50 days), not the default window of the calendar months before this one.
        func arguments(_ reports: String) -> [String] {
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withFullDate]
            return [
                "run", "--strategy", "stripe-payments", "--from", formatter.string(from: Date() - 60 * 86_400), "--to",
                formatter.string(from: Date() + 2 * 86_400), "--batch-size", "50", "--log-level", "warning", "--report-dir",
                directory.appendingPathComponent(reports).path,
            ]
        }

        func stop() async {
            await server.stop()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test(
        "SIGKILL at random batch commits of a Stripe run (3,000 payments, 4 kills, 5% of Stripe's answers 429 or 500), resumed each time, ends exactly like an uninterrupted run"
    )
    func crashAndResume() async throws {
        let payments = 3_000
        let kills = 4
        @Sendable func stop(_ setup: Setup) async { await setup.stop() }
        try await scoped(try await Setup.make(payments: payments, seed: 5), stop: stop) { setup in
            let expected = try await TestPostgres.withScratchDatabaseAsync { reference in
                try setup.prepare(database: reference)
                let clean = try await CommandRunner.run(
                    "clawback", setup.arguments("reference"), environment: try setup.environment(database: reference))
                #expect(clean.status == 75 || clean.status == 0, "\(clean.standardError)")
                return try RunCrashTests.snapshot(database: reference)
            }
            #expect(expected.checks.count == setup.output.grants.count)
            #expect(expected.ledger.count > payments / 50)

            try await TestPostgres.withScratchDatabaseAsync { crashed in
                try setup.prepare(database: crashed)
                var random = SeededGenerator(seed: 17)
                let monitor = try TestPostgres.connect(database: crashed)
                func checked() throws -> Int {
                    try monitor.query("SELECT count(*) FROM clawback.run_checks").first?.decode(Int.self, at: 0) ?? 0
                }
                // Each kill lands mid-run whatever the machine's load: the binary kills itself (SIGKILL) at a named
                // point, just before or just after one of its first batches' commits, a random one each time.
                for round in 0..<kills {
                    var environment = try setup.environment(database: crashed)
                    let point = Bool.random(using: &random) ? "batch.before-commit" : "batch.after-commit"
                    environment["CLAWBACK_CRASH_AT"] = "\(point):\(Int.random(in: 1...8, using: &random))"
                    let killed = try await CommandRunner.run("clawback", setup.arguments("crashed"), environment: environment)
                    #expect(killed.killedBySignal && killed.status == SIGKILL, "round \(round): \(killed.status) \(killed.standardError)")
                }
                #expect(try checked() < setup.output.grants.count, "the kills came too late to interrupt anything")
                var final = try await CommandRunner.run("clawback", setup.arguments("crashed"), environment: try setup.environment(database: crashed))
                // A run left with unverified grants (exit 75) is finished by the next invocation, as cron's would.
                if final.status == 75 {
                    final = try await CommandRunner.run("clawback", setup.arguments("crashed"), environment: try setup.environment(database: crashed))
                }
                #expect(final.status == 0 || final.status == 75, "\(final.standardError)")
                let actual = try RunCrashTests.snapshot(database: crashed)
                #expect(actual.ledger == expected.ledger)
                #expect(actual.checks == expected.checks)
                #expect(Set(actual.ledger).count == actual.ledger.count, "a ledger entry was written twice")
            }
        }
    }
}
