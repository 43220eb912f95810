import Foundation
import Postgres
import TestSupport
import Testing

@Suite("clawback ledger", .serialized)
struct LedgerCommandTests {
    @Test("staff list, filter, show and waive entries; pending work is counted for monitoring; bad input changes nothing")
    func staffCommands() async throws {
        try await RunCrashTests.Setup.with(purchases: 300, seed: 31) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let environment = try setup.environment(database: database)
                func clawback(_ arguments: [String]) async throws -> CommandResult {
                    try await CommandRunner.run("clawback", arguments, environment: environment)
                }
                let metrics = setup.directory.appendingPathComponent("run.prom").path
                let run = try await clawback(setup.arguments + ["--metrics-file", metrics])
                #expect(run.status == 0, "\(run.standardError)")
                let connection = try TestPostgres.connect(database: database)
                let entries = try connection.query("SELECT count(*) FROM clawback.ledger WHERE kind <> 'review'").first?.decode(Int.self, at: 0) ?? 0
                #expect(entries > 5)
                // The run's metrics count the pending work too.
                #expect(try String(contentsOfFile: metrics, encoding: .utf8).contains("clawback_ledger_pending_entries{source=\"run\"} \(entries)"))

                let listed = try await clawback(["ledger", "list", "--pending", "--json", "--limit", "1000"])
                #expect(listed.status == 0, "\(listed.standardError)")
                let rows = try #require(try JSONSerialization.jsonObject(with: Data(listed.standardOutput.utf8)) as? [[String: Any]])
                #expect(rows.count == entries)
                #expect(rows.allSatisfy { $0["outcome"] as? String == "pending" })
                let first = try #require(rows.first?["entry_id"] as? Int)
                let player = try #require(rows.first?["player_id"] as? String)
                let csv = try await clawback(["ledger", "list", "--player", player, "--csv"])
                #expect(csv.standardOutput.hasPrefix("entry_id,transaction_id,kind,units"))
                #expect(csv.standardOutput.contains("\r\n\(first),"))

                let waived = try await clawback(["ledger", "waive", String(first), "--by", "ana", "--reason", "goodwill: reported the bug"])
                #expect(waived.status == 0, "\(waived.standardError)")
                let again = try await clawback(["ledger", "waive", String(first), "--by", "ana", "--reason", "goodwill: reported the bug"])
                #expect(again.status == 0 && again.standardOutput.contains("nothing changed"))
                let conflicting = try await clawback(["ledger", "waive", String(first), "--by", "bo", "--reason", "other"])
                #expect(conflicting.status == 65)
                #expect(conflicting.standardError.contains("acknowledged already"))
                let missing = try await clawback(["ledger", "waive", "999999", "--by", "ana", "--reason", "x"])
                #expect(missing.status == 66)
                let noReason = try await clawback(["ledger", "waive", String(first), "--by", "ana", "--reason", " "])
                #expect(noReason.status == 64)
                for bad in [["--kind", "refund"], ["--outcome", "eaten"], ["--since", "yesterday"]] {
                    #expect(try await clawback(["ledger", "list"] + bad).status == 64, "\(bad)")
                }

                let shown = try await clawback(["ledger", "show", String(first)])
                #expect(shown.status == 0)
                #expect(shown.standardOutput.contains("the check that wrote it"))
                #expect(shown.standardOutput.contains("waived") && shown.standardOutput.contains("staff:ana"))
                #expect(try await clawback(["ledger", "show", "999999"]).status == 66)

                let waivedList = try await clawback(["ledger", "list", "--outcome", "waived", "--json"])
                let waivedRows = try #require(try JSONSerialization.jsonObject(with: Data(waivedList.standardOutput.utf8)) as? [[String: Any]])
                #expect(waivedRows.map { $0["entry_id"] as? Int } == [first])

                let pendingFile = setup.directory.appendingPathComponent("ledger.prom").path
                let pending = try await clawback(["ledger", "pending", "--metrics-file", pendingFile])
                #expect(pending.status == 0)
                let text = try String(contentsOfFile: pendingFile, encoding: .utf8)
                #expect(text.contains("clawback_ledger_pending_entries{source=\"ledger_pending\"} \(entries - 1)"))
                #expect(text.contains("clawback_ledger_oldest_pending_age_seconds{source=\"ledger_pending\"} "))
            }
        }
    }
}
