import Foundation
import Postgres
import Reconciliation
import TestSupport
import Testing

@Suite("clawback run --strategy")
struct StrategyCommandTests {
    @Test("notifications needs every app's app_apple_id (exit 78, naming the app); refund-history still names customer-history")
    func strategies() async throws {
        try await RunCrashTests.Setup.with(purchases: 30, seed: 23) { setup in
            let config = try String(contentsOfFile: setup.configPath, encoding: .utf8)
            let withoutAppleID = config.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.contains("app_apple_id") }.joined(separator: "\n")
            let path = setup.directory.appendingPathComponent("no-apple-id.yaml").path
            try withoutAppleID.write(toFile: path, atomically: true, encoding: .utf8)
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                var environment = try setup.environment(database: database)
                environment["CLAWBACK_CONFIG"] = path
                let refused = try await CommandRunner.run("clawback", setup.arguments + ["--strategy", "notifications"], environment: environment)
                #expect(refused.status == 78)
                #expect(refused.standardError.contains("app_apple_id for apps[0]"))
                let connection = try TestPostgres.connect(database: database)
                #expect(try connection.query("SELECT count(*) FROM clawback.runs").first?.decode(Int.self, at: 0) == 0)

                let renamed = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--strategy", "refund-history", "--json"],
                    environment: try setup.environment(database: database))
                #expect(renamed.status == 0, "\(renamed.standardError)")
                #expect(try connection.query("SELECT strategy FROM clawback.runs").first?.decode(String.self, at: 0) == "customer-history")
                let unknown = try await CommandRunner.run("clawback", setup.arguments + ["--strategy", "guess"], environment: environment)
                #expect(unknown.status == 64)
            }
        }
    }

    @Test(
        "--daily: one notified-refunds run per window holding kept grants, the next monthly run's last, each writing what a full re-check of the kept grants writes; its own window or narrowing is a usage error"
    )
    func daily() async throws {
        // Purchases over the last 150 days: some older than the next monthly run's window, yet kept.
        try await RunCrashTests.Setup.with(purchases: 400, seed: 29, days: 150) { setup in
            let windows = ReconciliationWindow.dailyWindows(after: Date(), months: 3, retentionMonths: 4)
            let kept = try #require(windows.first).start
            let format = ISO8601DateFormatter()
            format.formatOptions = [.withFullDate]
            // What a full re-check of every kept grant writes.
            let reference = try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let run = try await CommandRunner.run(
                    "clawback",
                    ["run", "--from", format.string(from: kept), "--to", format.string(from: Date() + 86_400 * 2), "--log-level", "warning"],
                    environment: try setup.environment(database: database))
                #expect(run.status == 0, "\(run.standardError)")
                return try Self.clawbacks(database: database)
            }
            #expect(reference.count > 5)
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                for refused in [
                    ["--month", "2026-10"], ["--from", setup.from, "--to", setup.to], ["--player", "p"], ["--strategy", "notifications"],
                ] {
                    let result = try await CommandRunner.run(
                        "clawback", ["run", "--daily", "--log-level", "warning"] + refused, environment: environment)
                    #expect(result.status == 64, "\(refused): \(result.standardError)")
                }
                let daily = try await CommandRunner.run("clawback", ["run", "--daily", "--json", "--log-level", "warning"], environment: environment)
                #expect(daily.status == 0, "\(daily.standardError)")
                let connection = try TestPostgres.connect(database: database)
                let runs = try connection.query(
                    "SELECT strategy, window_start, window_end FROM clawback.runs ORDER BY run_id"
                ).rows.map { (try $0.decode(String.self, at: 0), try $0.decode(Date.self, at: 1), try $0.decode(Date.self, at: 2)) }
                #expect(runs.map(\.0) == Array(repeating: "notified-refunds", count: windows.count))
                #expect(runs.map { try? ReconciliationWindow(start: $0.1, end: $0.2) } == windows)
                #expect(windows.count == 3 && windows.last == ReconciliationWindow.nextMonthly(after: Date(), months: 3))
                // Every refund of a kept grant is on the ledger, as the full re-check has it, some of them older
                // than the next monthly run's window; and not every grant was checked.
                #expect(try Self.clawbacks(database: database) == reference)
                let older =
                    try connection.query(
                        """
                        SELECT count(*) FROM clawback.ledger l JOIN clawback.grants g USING (transaction_id)
                        WHERE g.purchased_at < \(windows[windows.count - 1].start)
                        """
                    ).first?.decode(Int.self, at: 0) ?? 0
                #expect(older > 0, "refunds of purchases older than the next monthly window")
                let checked =
                    try connection.query("SELECT count(DISTINCT transaction_id) FROM clawback.run_checks").first?.decode(Int.self, at: 0) ?? 0
                #expect(checked > 0 && checked < 400)
                // Each purchase once, under the latest window that holds it.
                let twice = try connection.query(
                    "SELECT count(*) FROM (SELECT transaction_id FROM clawback.run_checks GROUP BY 1 HAVING count(*) > 1) t"
                ).first?.decode(Int.self, at: 0)
                #expect(twice == 0)
                let misplaced = try connection.query(
                    """
                    SELECT count(*) FROM clawback.run_checks c JOIN clawback.runs r USING (run_id)
                    WHERE c.purchased_at >= r.window_start + interval '1 month' AND r.window_end < \(windows[windows.count - 1].end)
                    """
                ).first?.decode(Int.self, at: 0)
                #expect(misplaced == 0, "an older window's pass checks only its month no later window holds")
            }
        }
    }

    /// Every clawback-side ledger entry: purchase, kind, units.
    static func clawbacks(database: String) throws -> [String] {
        try TestPostgres.connect(database: database).query(
            "SELECT transaction_id || ' ' || kind || ' ' || units FROM clawback.ledger WHERE kind <> 'review' ORDER BY 1"
        ).rows.map { try $0.decode(String.self, at: 0) }
    }
}
