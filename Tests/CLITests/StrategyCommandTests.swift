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
}
