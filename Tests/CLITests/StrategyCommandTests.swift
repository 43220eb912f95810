import Foundation
import Postgres
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

    @Test("--daily: the next monthly run's window with the notified-refunds strategy, no prune; its own window or narrowing is a usage error")
    func daily() async throws {
        try await RunCrashTests.Setup.with(purchases: 200, seed: 29) { setup in
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
                let run = try #require(
                    try connection.query(
                        "SELECT strategy, to_char(window_start, 'YYYY-MM-DD'), to_char(window_end, 'YYYY-MM-DD') FROM clawback.runs"
                    ).first)
                #expect(try run.decode(String.self, at: 0) == "notified-refunds")
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
                let thisMonth = try #require(calendar.dateInterval(of: .month, for: Date())).start
                let format = DateFormatter()
                format.calendar = calendar
                format.timeZone = calendar.timeZone
                format.dateFormat = "yyyy-MM-dd"
                let end = try #require(calendar.date(byAdding: .month, value: 1, to: thisMonth))
                let start = try #require(calendar.date(byAdding: .month, value: -3, to: end))
                #expect(try run.decode(String.self, at: 1) == format.string(from: start))
                #expect(try run.decode(String.self, at: 2) == format.string(from: end))
                // Only what the feed names was checked: the generated world's notified refunds, not every grant.
                let checked = try connection.query("SELECT count(*) FROM clawback.run_checks").first?.decode(Int.self, at: 0) ?? 0
                #expect(checked > 0 && checked < 200)
            }
        }
    }
}
