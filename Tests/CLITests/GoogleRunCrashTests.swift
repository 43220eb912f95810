import AppStoreSimulator
import Foundation
import Postgres
import Storage
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `clawback run --strategy google-orders` as cron runs it: the real binary against PostgreSQL and the
/// simulator's Google side over loopback, killed at random points and resumed.
@Suite("clawback run --strategy google-orders, end to end", .serialized)
struct GoogleRunCrashTests {
    @Test(
        "Google's daily run as cron runs it: the sweep, then --daily --strategy google-orders checks the kept voids' purchases in every window of kept grants, the next monthly one last, with its own metrics; --daily with another store's strategy is a usage error"
    )
    func daily() async throws {
        let setup = try await RunCrashTests.Setup.make(googleOrders: 600, seed: 31)
        @Sendable func stop(_ setup: RunCrashTests.Setup) async {
            await setup.server.stop()
            try? FileManager.default.removeItem(at: setup.directory)
        }
        try await scoped(setup, stop: stop) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                let refused = try await CommandRunner.run(
                    "clawback", ["run", "--daily", "--strategy", "customer-history", "--log-level", "warning"], environment: environment)
                #expect(refused.status == 64 && refused.standardError.contains("google-orders"), "\(refused.standardError)")
                let sweep = try await CommandRunner.run(
                    "clawback", ["google-play", "sweep-voids", "--log-level", "warning"], environment: environment)
                #expect(sweep.status == 0, "\(sweep.standardError)")
                let metrics = setup.directory.appendingPathComponent("google-daily.prom").path
                let daily = try await CommandRunner.run(
                    "clawback",
                    [
                        "run", "--daily", "--strategy", "google-orders", "--json", "--log-level", "warning", "--metrics-file", metrics,
                        "--report-dir", setup.directory.appendingPathComponent("reports").path,
                    ],
                    environment: environment)
                #expect(daily.status == 0, "\(daily.standardError)")
                let connection = try TestPostgres.connect(database: database)
                let runs = try connection.query("SELECT strategy, window_end > now() FROM clawback.runs ORDER BY run_id").rows
                    .map { (try $0.decode(String.self, at: 0), try $0.decode(Bool.self, at: 1)) }
                #expect(runs.count >= 2 && runs.allSatisfy { $0.0 == "google-voided-orders" })
                #expect(runs.last?.1 == true, "the next monthly run's window, up to the end of this month, last")
                let kept =
                    try connection.query(
                        """
                        SELECT count(DISTINCT v.purchase_token) FROM clawback.google_voided_purchases v
                        JOIN clawback.grants g ON g.transaction_id = v.purchase_token
                        """
                    ).first?.decode(Int.self, at: 0) ?? 0
                let checked =
                    try connection.query("SELECT count(DISTINCT transaction_id) FROM clawback.run_checks").first?.decode(Int.self, at: 0) ?? 0
                #expect(kept > 0 && checked == kept && checked < 600)
                let text = try String(contentsOfFile: metrics, encoding: .utf8)
                #expect(text.contains("clawback_google_daily_last_success_timestamp_seconds "))
            }
        }
    }

    @Test("SIGKILL at random points of a Google Play run (20,000 grants, 5 kills), resumed each time, ends exactly like an uninterrupted run")
    func crashAndResume() async throws {
        let grants = 20_000
        let kills = 5
        let setup = try await RunCrashTests.Setup.make(googleOrders: grants, seed: 21)
        @Sendable func stop(_ setup: RunCrashTests.Setup) async {
            await setup.server.stop()
            try? FileManager.default.removeItem(at: setup.directory)
        }
        try await scoped(setup, stop: stop) { setup in
            let expected = try await TestPostgres.withScratchDatabaseAsync { reference in
                try setup.prepare(database: reference)
                let clean = try await CommandRunner.run(
                    "clawback", setup.googleArguments(reports: "reference"), environment: try setup.environment(database: reference))
                // What a grant left unverified says, so that a failure here names the store's answer behind it.
                let unverified = try TestPostgres.connect(database: reference).query(
                    "SELECT transaction_id || ': ' || coalesce(detail, '') FROM clawback.checks WHERE verdict = 'unverified'"
                ).rows.map { try $0.decode(String.self, at: 0) }
                #expect(clean.status == 0, "\(clean.standardError); unverified: \(unverified)")
                return try CrashPointTests.EndState.read(database: reference, reports: setup.directory.appendingPathComponent("reference"))
            }
            #expect(expected.checks.count == setup.googleGrants.count)
            #expect(expected.ledger.count > grants / 20)

            try await TestPostgres.withScratchDatabaseAsync { crashed in
                try setup.prepare(database: crashed)
                // Google slow (a second an answer: an attempt needs ten seconds for the whole run), so that a kill
                // lands mid-run even when a loaded machine sees the first commit seconds late.
                setup.server.simulator.google?.setFaults(GoogleFaults(latencyMilliseconds: 1_000))
                var random = SeededGenerator(seed: 98)
                let monitor = try TestPostgres.connect(database: crashed)
                func checked() throws -> Int {
                    try monitor.query("SELECT count(*) FROM clawback.checks").first?.decode(Int.self, at: 0) ?? 0
                }
                // Some kill lands while grants are left unchecked (under load, the later ones may land while a
                // run that checked everything writes its reports).
                var interrupted = false
                var finishedByAnAttempt = false
                for _ in 0..<kills {
                    let before = try checked()
                    let process = try ChildProcess.start(
                        "clawback", setup.googleArguments(reports: "crashed"), environment: try setup.environment(database: crashed))
                    // After this attempt has committed something, at a random point after that.
                    let deadline = ContinuousClock.now + .seconds(60)
                    while try checked() == before && process.isRunning && ContinuousClock.now < deadline {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    try await Task.sleep(for: .milliseconds(Int64.random(in: 0...60, using: &random)))
                    guard process.isRunning else {
                        // A loaded machine let this attempt finish the run: nothing is left to interrupt.
                        process.waitUntilExit()
                        finishedByAnAttempt = process.terminationStatus == 0
                        break
                    }
                    kill(process.processIdentifier, SIGKILL)
                    try await process.waitUntilExit(thenForSessionsOn: crashed)
                    if try checked() < setup.googleGrants.count { interrupted = true }
                }
                #expect(interrupted, "the kills came too late to interrupt anything")
                // The same command once more finishes (resumes) the run, unless an attempt already did: then another
                // invocation would be next month's run, not this one's end.
                if !finishedByAnAttempt {
                    let final = try await CommandRunner.run(
                        "clawback", setup.googleArguments(reports: "crashed"), environment: try setup.environment(database: crashed))
                    #expect(final.status == 0, "\(final.standardError)")
                }
                let actual = try CrashPointTests.EndState.read(database: crashed, reports: setup.directory.appendingPathComponent("crashed"))
                #expect(actual.ledger == expected.ledger && actual.checks == expected.checks && actual.reports == expected.reports)
                #expect(Set(actual.ledger).count == actual.ledger.count, "a ledger entry was written twice")
            }
        }
    }
}
