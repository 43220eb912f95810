import Foundation
import Postgres
import TestSupport
import Testing

@Suite("clawback report, and the reports of clawback run", .serialized)
struct ReportCommandTests {
    func files(in directory: URL) throws -> [String: [UInt8]] {
        var contents: [String: [UInt8]] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            contents[name] = Array(try Data(contentsOf: directory.appendingPathComponent(name)))
        }
        return contents
    }

    @Test("a run writes its reports; `report --run` and `report` of its window, as of the same time, write the same bytes again")
    func runWritesReportsAndReportRegenerates() async throws {
        try await RunCrashTests.Setup.with(purchases: 1_500, seed: 5) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                let run = try CommandRunner.run("clawback", setup.arguments + ["--json"], environment: environment)
                #expect(run.status == 0, "\(run.standardError)")
                let summary = try #require(try JSONSerialization.jsonObject(with: Data(run.standardOutput.utf8)) as? [String: Any])
                let runID = try #require(summary["run_id"] as? Int)
                let reported = try #require(summary["reports"] as? [String])
                #expect(reported.count == 5)  // detail, summary, refund requests, chargeback reviews, HTML
                let reports = setup.directory.appendingPathComponent("reports")
                let written = try files(in: reports)
                #expect(Set(written.keys) == Set(reported.map { URL(fileURLWithPath: $0).lastPathComponent }))
                #expect(written.keys.allSatisfy { $0.hasPrefix("clawback-") && $0.contains("-run-\(runID)-") })

                // The detail CSV has one row per flagged check.
                let connection = try TestPostgres.connect(database: database)
                let flagged = try connection.query("SELECT count(*) FROM clawback.checks WHERE verdict <> 'ok'").first?.decode(Int.self, at: 0) ?? 0
                #expect(flagged > 20)
                let detail = try #require(written.first { $0.key.hasSuffix("-detail.csv") }?.value)
                #expect(detail.split(separator: 0x0A).count == flagged + 1)

                // The game's acknowledgements are read as of a time the summary names: given back, the same bytes.
                let summaryText = String(decoding: try #require(written.first { $0.key.hasSuffix("-summary.csv") }?.value), as: UTF8.self)
                let asOfNote = try #require(summaryText.split(separator: "\r\n").first { $0.contains("ledger_as_of") })
                let asOf = String(try #require(asOfNote.split(separator: " ").last).prefix { $0 != "," })
                let again = setup.directory.appendingPathComponent("again")
                let byRun = try CommandRunner.run(
                    "clawback", ["report", "--run", String(runID), "--as-of", asOf, "--report-dir", again.path], environment: environment)
                #expect(byRun.status == 0, "\(byRun.standardError)")
                #expect(try files(in: again) == written)

                let byWindow = setup.directory.appendingPathComponent("window")
                let windowReport = try CommandRunner.run(
                    "clawback", ["report", "--from", setup.from, "--to", setup.to, "--as-of", asOf, "--report-dir", byWindow.path],
                    environment: environment)
                #expect(windowReport.status == 0, "\(windowReport.standardError)")
                #expect(try files(in: byWindow) == written)
            }
        }
    }

    @Test("a report directory that cannot be written: exit 73 naming it, the run committed, and `report` writes it later")
    func unwritableReportDirectory() async throws {
        try await RunCrashTests.Setup.with(purchases: 300, seed: 6) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                let blocker = setup.directory.appendingPathComponent("a-file")
                try Data("x".utf8).write(to: blocker)
                let run = try CommandRunner.run("clawback", setup.arguments + ["--report-dir", blocker.path + "/reports"], environment: environment)
                #expect(run.status == 73)
                #expect(run.standardError.contains(blocker.path))
                #expect(run.standardError.contains("exists and is not a directory"))
                let connection = try TestPostgres.connect(database: database)
                let row = try #require(try connection.query("SELECT run_id, status FROM clawback.runs").first)
                #expect(try row.decode(String.self, at: 1) == "succeeded")
                #expect(try connection.query("SELECT count(*) FROM clawback.checks").first?.decode(Int.self, at: 0) == 300)
                let runID = try row.decode(Int64.self, at: 0)
                #expect(run.standardError.contains("clawback report --run \(runID)"))

                let later = try CommandRunner.run(
                    "clawback", ["report", "--run", String(runID), "--report-dir", setup.directory.appendingPathComponent("ok").path],
                    environment: environment)
                #expect(later.status == 0, "\(later.standardError)")
                #expect(try files(in: setup.directory.appendingPathComponent("ok")).count == 5)

                let missing = try CommandRunner.run("clawback", ["report", "--run", "999999"], environment: environment)
                #expect(missing.status == 66)
                #expect(missing.standardError.contains("there is no run 999999"))
            }
        }
    }
}
