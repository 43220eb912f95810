import Foundation
import Postgres
import TestSupport
import Testing

/// SIGKILL exactly where a crash hurts most (inside a batch's commit, between the run's commit and its
/// reports, between two report renames, between a partition's detach and its drop), then the same command
/// again: the end state must be the uninterrupted run's, compared by content.
@Suite("Crashes at named points", .serialized)
struct CrashPointTests {
    /// Every point, each at a hit that lands mid-run where it repeats (the 3rd batch of 20).
    static let points: [(point: String, hit: Int)] = [
        ("batch.before-commit", 3), ("batch.after-commit", 3), ("run.after-finish", 1), ("reports.before-rename", 1),
        ("reports.between-renames", 1), ("reports.after-rename", 1), ("prune.after-detach", 1), ("prune.after-drop", 1),
        ("run.before-finalize", 1),
    ]

    /// What an uninterrupted and a crashed-then-rerun database and report directory must agree on.
    struct EndState: Equatable {
        var ledger: [String]
        var checks: [String]
        var runs: [String]
        var partitions: [String]
        /// File name → content. The summary's per-attempt lines (attempts, each store's requests of the last
        /// attempt) are left out: they describe how the run went, not what it found.
        var reports: [String: String]

        /// The end state of `setup`'s run with no fault, in a scratch database of the shared server.
        static func uninterrupted(_ setup: RunCrashTests.Setup) async throws -> EndState {
            try await TestPostgres.withScratchDatabaseAsync { reference in
                try setup.prepare(database: reference)
                let reports = setup.directory.appendingPathComponent("reference")
                let clean = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--report-dir", reports.path], environment: try setup.environment(database: reference))
                #expect(clean.status == 0, "\(clean.standardError)")
                return try read(database: reference, reports: reports)
            }
        }

        static func read(database: String, reports directory: URL) throws -> EndState {
            try read(on: try TestPostgres.connect(database: database), reports: directory)
        }

        static func read(on connection: PostgresConnection, reports directory: URL) throws -> EndState {
            let snapshot = try RunCrashTests.snapshot(on: connection)
            let runs = try connection.query(
                "SELECT run_id || '|' || status || '|' || (finalized_at IS NOT NULL) FROM clawback.runs ORDER BY run_id"
            ).rows.map { try $0.decode(String.self, at: 0) }
            let partitions = try connection.query(
                "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid ORDER BY 1"
            ).rows.map { try $0.decode(String.self, at: 0) }
            var reports: [String: String] = [:]
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
                let text = try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
                if name.hasSuffix("-summary.csv") {
                    // Attempts, Apple's request counts and the time the report was made differ by nature.
                    reports[name] = text.split(separator: "\r\n")
                        .filter {
                            !$0.contains(",run,") && !$0.contains(",apple_") && !$0.contains(",google_play_") && !$0.contains(",speed,")
                                && !$0.contains(",ledger_as_of,")
                        }
                        .joined(separator: "\r\n")
                } else if name.hasSuffix("-detail.csv") {
                    // The game's side keeps its figures; an entry's id and timestamps are the database's.
                    let csv = try StrictCSV(Array(text.utf8))
                    let varying: Set = ["ledger_entry_id", "entry_created", "acknowledged_at", "pending_days"]
                    reports[name] = csv.records.map { record in
                        zip(csv.header, record).map { varying.contains($0) ? "-" : $1 }.joined(separator: "|")
                    }.joined(separator: "\n")
                } else {
                    reports[name] = name.hasSuffix(".html") ? "(html present)" : text
                }
            }
            return EndState(ledger: snapshot.ledger, checks: snapshot.checks, runs: runs, partitions: partitions, reports: reports)
        }
    }

    @Test(
        "SIGKILL at each named point, then the same command: ledger, checks, runs, partitions and reports as if uninterrupted",
        arguments: [
            [],
            // Most checks in pages; small batches so that the third one lands mid-run.
            ["--strategy", "notifications", "--audit-sample", "5", "--batch-size", "10"],
        ])
    func everyPoint(strategy: [String]) async throws {
        try await RunCrashTests.Setup.with(purchases: 2_000, seed: 21) { setup in
            let prune = RunPruneTests()
            /// The grants, plus one in a partition past retention, which the run's prune drops.
            func start(_ database: String) throws -> String {
                try setup.prepare(database: database)
                return String(try prune.plantOldGrants(database: database).dropFirst("clawback.".count))
            }
            func run(_ database: String, reports: URL, crashAt: String? = nil) async throws -> CommandResult {
                var environment = try setup.environment(database: database)
                environment["CLAWBACK_CRASH_AT"] = crashAt
                return try await CommandRunner.run(
                    "clawback", setup.arguments + strategy + ["--report-dir", reports.path], environment: environment)
            }

            let expected = try await TestPostgres.withScratchDatabaseAsync { reference in
                let old = try start(reference)
                let directory = setup.directory.appendingPathComponent("reports-reference")
                let clean = try await run(reference, reports: directory)
                #expect(clean.status == 0, "\(clean.standardError)")
                let state = try EndState.read(database: reference, reports: directory)
                #expect(!state.partitions.contains(old), "the reference run did not prune \(old)")
                return state
            }
            #expect(expected.runs == ["1|succeeded|true"])
            #expect(expected.ledger.count > 50)
            #expect(expected.checks.count == 2_000)
            #expect(expected.reports.count == 5)

            for (point, hit) in Self.points {
                try await TestPostgres.withScratchDatabaseAsync { database in
                    _ = try start(database)
                    let directory = setup.directory.appendingPathComponent("reports-\(point)")
                    let crashed = try await run(database, reports: directory, crashAt: "\(point):\(hit)")
                    #expect(
                        crashed.killedBySignal && crashed.status == SIGKILL,
                        "\(point): not killed there (\(crashed.status)): \(crashed.standardError)")
                    // Its last COMMIT and its lock's session may outlive it on the server for a moment.
                    try await TestPostgres.waitForOtherSessionsToEnd(database: database)
                    if point == "run.after-finish" {
                        // Committed without its reports: the operator's list says what the next run will do.
                        let runs = try await CommandRunner.run("clawback", ["runs"], environment: try setup.environment(database: database))
                        #expect(runs.standardOutput.contains("succeeded, reports pending"), "\(runs.standardOutput)")
                    }
                    let rerun = try await run(database, reports: directory)
                    #expect(rerun.status == 0, "\(point): \(rerun.standardError)")
                    let actual = try EndState.read(database: database, reports: directory)
                    #expect(actual == expected, "\(point)")
                    #expect(Set(actual.ledger).count == actual.ledger.count, "\(point): a ledger entry was written twice")
                }
            }
        }
    }

    @Test("a crash point that does not exist is refused, so a misspelt fault test cannot pass by never firing")
    func unknownPoint() async throws {
        let result = try await CommandRunner.run("clawback", ["--version"], environment: ["CLAWBACK_CRASH_AT": "batch.befor-commit"])
        #expect(result.status == 70)
        #expect(result.standardError.contains("names no crash point"))
    }
}
