import Foundation
import Postgres
import TestSupport
import Testing

@Suite("clawback config check, and several apps in one run", .serialized)
struct ConfigCheckCommandTests {
    static let bundles = ["com.example.clawback.game", "com.example.clawback.puzzle"]

    /// The apps' key_file paths, in the order of the configuration.
    static func keyFiles(in config: String) -> [String] {
        config.split(separator: "\n").filter { $0.contains("key_file:") }
            .map { String($0.split(separator: ":").last ?? "").trimmingCharacters(in: .whitespaces) }
    }

    /// The status column of the line for `item` in `config check`'s table.
    func status(_ item: String, in output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(item + " ") }?.dropFirst(item.count).split(separator: " ").first.map(String.init)
    }

    func detail(_ item: String, in output: String) -> String {
        String(output.split(separator: "\n").first { $0.hasPrefix(item + " ") } ?? "")
    }

    @Test("the demo-style configuration passes, every item listed; a wrong key is refused by the simulator and named")
    func passesAndRefusesWrongKey() async throws {
        try await RunCrashTests.Setup.with(purchases: 50, seed: 21, bundles: Self.bundles) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                let check = try CommandRunner.run("clawback", ["config", "check"], environment: environment)
                #expect(check.status == 0, "\(check.standardOutput)\n\(check.standardError)")
                for item in ["apps[0].key_file", "apps[1].key_file", "database", "migrations", "reports.directory"] {
                    #expect(check.standardOutput.contains(item), "\(item) missing from:\n\(check.standardOutput)")
                }
                #expect(status("apps[1] com.example.clawback.puzzle (Production)", in: check.standardOutput) == "ok")
                #expect(detail("apps[1] com.example.clawback.puzzle (Production)", in: check.standardOutput).contains("authenticated"))
                #expect(status("apple.trusted_roots[0]", in: check.standardOutput) == "warn")
                #expect(check.standardOutput.hasSuffix("configuration is fine\n"))

                // The second app given the first app's key: the simulator, like Apple, refuses the token.
                let config = try String(contentsOfFile: setup.configPath, encoding: .utf8)
                let keys = Self.keyFiles(in: config)
                try #require(keys.count == 2)
                let swapped = config.replacingOccurrences(of: "key_file: \(keys[1])", with: "key_file: \(keys[0])")
                let swappedPath = setup.directory.appendingPathComponent("swapped.yaml").path
                try swapped.write(toFile: swappedPath, atomically: true, encoding: .utf8)
                let wrong = try CommandRunner.run("clawback", ["config", "check", "--config", swappedPath], environment: environment)
                #expect(wrong.status == 78)
                #expect(status("apps[1] com.example.clawback.puzzle (Production)", in: wrong.standardOutput) == "FAIL")
                #expect(detail("apps[1] com.example.clawback.puzzle (Production)", in: wrong.standardOutput).contains("401: Apple refused the token"))
            }
        }
    }

    @Test("a broken configuration: each problem named, exit 78")
    func namesEveryProblem() async throws {
        try await RunCrashTests.Setup.with(purchases: 10, seed: 22, bundles: Self.bundles) { setup in
            let directory = setup.directory
            // An unknown field stops at the file.
            let typo = directory.appendingPathComponent("typo.yaml").path
            try (try String(contentsOfFile: setup.configPath, encoding: .utf8) + "\nrun_options: {}\n").write(
                toFile: typo, atomically: true, encoding: .utf8)
            let unknown = try await CommandRunner.run("clawback", ["config", "check", "--config", typo])
            #expect(unknown.status == 78)
            #expect(status("run_options", in: unknown.standardOutput) == "FAIL")

            // A missing key file, a key file others can read, and a database nobody listens on.
            var config = try String(contentsOfFile: setup.configPath, encoding: .utf8)
            let keys = Self.keyFiles(in: config)
            config = config.replacingOccurrences(of: "key_file: \(keys[0])", with: "key_file: keys/missing.p8")
            let openKey = keys[1]
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: openKey)
            let broken = directory.appendingPathComponent("broken.yaml").path
            try config.write(toFile: broken, atomically: true, encoding: .utf8)
            let result = try await CommandRunner.run(
                "clawback", ["config", "check", "--config", broken],
                environment: ["CLAWBACK_DATABASE_URL": "postgresql://clawback@127.0.0.1:1/none?connect_timeout=2"])
            #expect(result.status == 78)
            let output = result.standardOutput
            #expect(status("apps[0].key_file", in: output) == "FAIL" && detail("apps[0].key_file", in: output).contains("missing.p8"))
            #expect(status("apps[1].key_file", in: output) == "FAIL" && detail("apps[1].key_file", in: output).contains("readable by others"))
            #expect(status("database", in: output) == "FAIL" && detail("database", in: output).contains("unreachable"))
            #expect(output.contains("3 problem(s)"))
        }
    }

    @Test("one run verifies the grants of two apps, each with its own key")
    func twoApps() async throws {
        try await RunCrashTests.Setup.with(purchases: 400, seed: 23, bundles: Self.bundles) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let run = try CommandRunner.run("clawback", setup.arguments, environment: try setup.environment(database: database))
                #expect(run.status == 0, "\(run.standardError)")
                let connection = try TestPostgres.connect(database: database)
                let rows = try connection.query(
                    """
                    SELECT bundle_id, count(*), count(*) FILTER (WHERE verdict = 'unverified'), count(*) FILTER (WHERE verdict = 'refunded')
                    FROM clawback.checks GROUP BY bundle_id ORDER BY bundle_id
                    """
                ).rows
                #expect(try rows.map { try $0.decode(String.self, at: 0) } == Self.bundles)
                for row in rows {
                    #expect(try row.decode(Int.self, at: 1) > 150)
                    #expect(try row.decode(Int.self, at: 2) == 0)
                    #expect(try row.decode(Int.self, at: 3) > 0)
                }
                // --bundle narrows to one app.
                let narrowed = try CommandRunner.run(
                    "clawback", setup.arguments + ["--bundle", Self.bundles[1], "--json"], environment: try setup.environment(database: database))
                #expect(narrowed.status == 0, "\(narrowed.standardError)")
                let summary = try #require(try JSONSerialization.jsonObject(with: Data(narrowed.standardOutput.utf8)) as? [String: Any])
                let counters = try #require(summary["counters"] as? [String: Any])
                #expect(counters["grantsInScope"] as? Int == (try rows[1].decode(Int.self, at: 1)))
            }
        }
    }
}
