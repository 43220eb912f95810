import AppStoreSimulator
import Foundation
import Postgres
import Storage
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The three stores in one database, as a studio selling in the App Store, on Google Play and in a web shop
/// on Stripe runs them: the real binary runs each store's monthly re-check against the simulator serving all
/// three over loopback, with 5% of every store's answers failing (Apple's retryable errors, Google's 500s
/// and 503s, Stripe's 429s and 500s), killed with SIGKILL at random batch commits of each store's run and
/// resumed: the ledger and the checks end exactly as uninterrupted runs leave them, each entry once, and no
/// store's run touches another's grants.
@Suite("three stores in one database, end to end", .serialized)
struct ThreeStoreCrashTests {
    static func setup() async throws -> RunCrashTests.Setup {
        let now = Date()
        var google = try GooglePlayWorldGenerator.generate(
            orders: 1_500, start: now - 86_400 * 50, end: now - 86_400, refundRate: 0.1, unknownShare: 0.002, seed: 41)
        for (id, order) in google.world.orders where order.state == "PENDING_REFUND" { google.world.orders[id]?.state = "PROCESSED" }
        var stripe = StripeWorldGenerator.generate(
            payments: 1_500, start: now - 50 * 86_400, end: now - 86_400, shop: "web.studio.game", refundRate: 0.1, disputeRate: 0.05,
            unknownShare: 0.005, key: "rk_live_three", seed: 43)
        // A refund still pending leaves its grant unverified for good: settled, so that every run can finish.
        for (id, payment) in stripe.world.payments {
            for (index, refund) in payment.refunds.enumerated() where refund.status == "pending" || refund.status == "requires_action" {
                stripe.world.payments[id]?.refunds[index].status = "succeeded"
            }
        }
        let setup = try await RunCrashTests.Setup.make(purchases: 1_500, seed: 47, google: google, stripe: stripe)
        var apple = FaultPlan()
        apple.retryableErrorShare = 0.05
        setup.server.simulator.setFaults(apple)
        setup.server.simulator.google?.setFaults(GoogleFaults(failureShare: 0.05))
        setup.server.simulator.stripe?.setFaults(StripeFaults(rateLimitedShare: 0.025, serverErrorShare: 0.025))
        return setup
    }

    /// Each store's monthly run over the setup's window, its reports in `reports`.
    static func runs(_ setup: RunCrashTests.Setup, reports: String) -> [(store: String, arguments: [String])] {
        let tail = [
            "--from", setup.from, "--to", setup.to, "--log-level", "warning", "--report-dir", setup.directory.appendingPathComponent(reports).path,
        ]
        return [
            ("app_store", ["run"] + tail), ("google_play", ["run", "--strategy", "google-orders"] + tail),
            ("stripe", ["run", "--strategy", "stripe-payments"] + tail),
        ]
    }

    /// Runs `arguments` until the run has nothing left unverified (exit 0), as cron's next invocations would.
    static func finish(_ arguments: [String], environment: [String: String]) async throws {
        var result = try await CommandRunner.run("clawback", arguments, environment: environment)
        for _ in 0..<4 where result.status == 75 { result = try await CommandRunner.run("clawback", arguments, environment: environment) }
        #expect(result.status == 0, "\(arguments.prefix(3)): \(result.status) \(result.standardError)")
    }

    @Test("SIGKILL at random batch commits of each store's run (1,500 grants each, 2 kills each, 5% of answers failing) ends like uninterrupted runs")
    func crashAndResume() async throws {
        let setup = try await Self.setup()
        @Sendable func stop(_ setup: RunCrashTests.Setup) async { await setup.stop() }
        try await scoped(setup, stop: stop) { setup in
            let expected = try await TestPostgres.withScratchDatabaseAsync { reference in
                try setup.prepare(database: reference)
                for run in Self.runs(setup, reports: "reference") {
                    try await Self.finish(run.arguments, environment: try setup.environment(database: reference))
                }
                return try RunCrashTests.snapshot(database: reference)
            }
            let grants = setup.output.grants.count + setup.googleGrants.count + (setup.stripe?.grants.count ?? 0)
            #expect(expected.checks.count == grants, "every store's grant checked once, by its own store's run")
            // Every store's world moves units: an empty ledger would compare equal for nothing.
            let google = Set(setup.googleGrants.map(\.transaction_id))
            let byStore = Dictionary(grouping: expected.ledger) { entry in
                let id = String(entry.prefix { $0 != "|" })
                return google.contains(id) ? "google_play" : id.hasPrefix("pi_") ? "stripe" : "app_store"
            }
            #expect(byStore.keys.sorted() == ["app_store", "google_play", "stripe"], "\(byStore.mapValues(\.count))")
            let stores = try await TestPostgres.withScratchDatabaseAsync { reference in
                try setup.prepare(database: reference)
                return try TestPostgres.connect(database: reference).query("SELECT DISTINCT store::text FROM clawback.grants ORDER BY 1").rows.map {
                    try $0.decode(String.self, at: 0)
                }
            }
            #expect(stores == ["app_store", "google_play", "stripe"])

            try await TestPostgres.withScratchDatabaseAsync { crashed in
                try setup.prepare(database: crashed)
                var random = SeededGenerator(seed: 53)
                let monitor = try TestPostgres.connect(database: crashed)
                // The stores' runs interleaved, each killed twice at a random batch commit, then resumed to the end.
                var kills = Self.runs(setup, reports: "crashed").flatMap { [$0, $0] }
                kills.shuffle(using: &random)
                for run in kills {
                    var environment = try setup.environment(database: crashed)
                    let point = Bool.random(using: &random) ? "batch.before-commit" : "batch.after-commit"
                    environment["CLAWBACK_CRASH_AT"] = "\(point):\(Int.random(in: 1...4, using: &random))"
                    let killed = try await CommandRunner.run("clawback", run.arguments, environment: environment)
                    #expect(killed.killedBySignal && killed.status == SIGKILL, "\(run.store): \(killed.status) \(killed.standardError)")
                    // The killed process's sessions (and the run's lock) end before the next one starts.
                    try await TestPostgres.waitForOtherSessionsToEnd(database: crashed)
                }
                let checked = try monitor.query("SELECT count(*) FROM clawback.run_checks").first?.decode(Int.self, at: 0) ?? 0
                #expect(checked < grants, "the kills came too late to interrupt anything")
                for run in Self.runs(setup, reports: "crashed") {
                    try await Self.finish(run.arguments, environment: try setup.environment(database: crashed))
                }
                let actual = try RunCrashTests.snapshot(database: crashed)
                #expect(actual.ledger == expected.ledger)
                #expect(actual.checks == expected.checks)
                #expect(Set(actual.ledger).count == actual.ledger.count, "a ledger entry was written twice")
                // Each store's checks are its own grants': a run never reads another store's.
                let crossed = try monitor.query(
                    """
                    SELECT count(*) FROM clawback.run_checks c JOIN clawback.runs r USING (run_id)
                    JOIN clawback.grants g ON g.transaction_id = c.transaction_id
                    WHERE (r.strategy = 'stripe-payments') <> (g.store = 'stripe')
                       OR (r.strategy = 'google-orders') <> (g.store = 'google_play')
                    """
                ).first?.decode(Int.self, at: 0)
                #expect(crossed == 0)
            }
        }
    }
}
