import Foundation
import Postgres
import Reconciliation
import Reports
import Storage
import TestSupport
import Testing

/// The game's side in finance's reports: each flagged purchase's latest entry and what the game did with
/// it, and the summary's owed against recovered, read through the ledger's own claim and acknowledge.
@Suite("Owed and recovered in the reports")
struct RecoveryReportTests {
    @Test("applied, partial, waived, pending, superseded and given back: the detail's columns and the summary's figures")
    func outcomes() throws {
        try ReportFixture.with { fixture in
            let run = try fixture.run(grantsInScope: 8)
            // 600 units for 9.99 USD each; an earlier window's take-back of the same product is not this report's.
            for id in ["applied", "partial", "waived", "pending", "superseded", "given-back"] {
                try fixture.check(.init(transactionID: id, playerID: "player-" + id), run: run)
            }
            let earlier = try fixture.run(start: ReportFixture.windowStart.addingTimeInterval(-86_400 * 30), end: ReportFixture.windowStart)
            try fixture.check(.init(transactionID: "earlier"), run: earlier)
            try fixture.reversal(transaction: "superseded", units: -600, run: run)
            // The game claims everything and acknowledges what it did; the reversed take-back is settled by the claim.
            let claimed = try fixture.connection.query("SELECT entry_id, transaction_id, units FROM clawback.claim_clawbacks('test-game', 100)").rows
            #expect(
                Set(try claimed.map { try $0.decode(String.self, at: 1) }) == ["applied", "partial", "waived", "pending", "given-back", "earlier"])
            try fixture.acknowledge(transaction: "applied", outcome: "applied")
            try fixture.acknowledge(transaction: "partial", outcome: "partial", units: 250)
            try fixture.acknowledge(transaction: "waived", outcome: "waived", note: "goodwill after an outage")
            try fixture.acknowledge(transaction: "given-back", outcome: "applied")
            // Apple reverses the applied refund afterwards: the game gives the 600 units back.
            try fixture.reversal(transaction: "given-back", units: -600, run: run)
            let giveBack = try fixture.connection.query("SELECT units FROM clawback.claim_clawbacks('test-game', 100)").rows
            #expect(try giveBack.map { try $0.decode(Int64.self, at: 0) } == [-600])
            try fixture.acknowledge(transaction: "given-back", outcome: "applied")

            // Ten days on, the pending take-back is 10 days old.
            let asOf = Date().addingTimeInterval(86_400 * 10)
            let files = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path, asOf: asOf), from: ReportStore(fixture.connection.storage))
            let detail = try StrictCSV(try ReportFixture.bytes(files.detail)).rows
            func row(_ id: String) throws -> [String: String] { try #require(detail.first { $0["transaction_id"] == id }) }
            let expected: [String: (units: String, outcome: String, applied: String, entry: String, recovered: String)] = [
                "applied": ("600", "applied", "600", "9.99", "9.99"),
                "partial": ("600", "partial", "250", "9.99", "4.16"),  // 9.99 × 250 / 600 = 4.1625
                "waived": ("600", "waived", "0", "9.99", "0.00"),
                "pending": ("600", "pending", "", "9.99", ""),
                "superseded": ("-600", "superseded", "0", "-9.99", "0.00"),
                "given-back": ("-600", "applied", "-600", "-9.99", "-9.99"),
            ]
            for (id, want) in expected {
                let line = try row(id)
                #expect(line["entry_units"] == want.units, "\(id)")
                #expect(line["outcome"] == want.outcome, "\(id)")
                #expect(line["units_applied"] == want.applied, "\(id)")
                #expect(line["entry_amount_informational"] == want.entry, "\(id)")
                #expect(line["recovered_amount_informational"] == want.recovered, "\(id)")
                #expect(line["acknowledged_at"]?.isEmpty == (id == "pending"), "\(id)")
                #expect(line["pending_days"] == (id == "pending" ? "10" : ""), "\(id)")
                #expect(line["ledger_entry_id"].flatMap(Int64.init) != nil, "\(id)")
            }
            #expect(detail.count == 6)

            let summary = try StrictCSV(try ReportFixture.bytes(files.summary)).rows
            func figure(_ key: String) -> [String]? {
                summary.first { $0["section"] == "recovery" && $0["key"] == key && $0["currency"] == "USD" && $0["product_id"] == "gems_600" }
                    .map { [$0["count"] ?? "", $0["units"] ?? "", $0["amount_informational"] ?? ""] }
            }
            #expect(figure("owed") == ["4", "2400", "39.96"])
            #expect(figure("recovered") == ["1", "600", "9.99"])
            #expect(figure("partial") == ["1", "250", "4.16"])
            #expect(figure("waived") == ["1", "600", "9.99"])
            #expect(figure("superseded") == ["0", "0", "0.00"])
            #expect(figure("pending") == ["1", "600", "9.99"])
            #expect(figure("pending_0_7_days") == ["0", "0", "0.00"])
            #expect(figure("pending_8_30_days") == ["1", "600", "9.99"])
            #expect(figure("pending_over_30_days") == ["0", "0", "0.00"])
            #expect(figure("give_back_owed") == ["2", "-1200", "-19.98"])
            #expect(figure("given_back") == ["1", "-600", "-9.99"])
            #expect(figure("give_back_superseded") == ["1", "-600", "-9.99"])
            #expect(figure("give_back_pending") == ["0", "0", "0.00"])
            #expect(summary.contains { $0["key"] == "ledger_as_of" && ($0["note"] ?? "").contains(ReportTimestamp.format(asOf)) })

            let html = String(decoding: try ReportFixture.bytes(try #require(files.html)), as: UTF8.self)
            #expect(html.contains("id=\"recovery\""))
            #expect(html.contains("4.16"))
            #expect(html.contains(ReportTimestamp.format(asOf)))

            // Forty days on, the same entry is over 30 days old; before the run, nothing was acknowledged or written.
            let later = try ReportGenerator.write(
                .run(run),
                options: .init(directory: fixture.directory.appendingPathComponent("later").path, asOf: Date().addingTimeInterval(86_400 * 40)),
                from: ReportStore(fixture.connection.storage))
            let laterSummary = try StrictCSV(try ReportFixture.bytes(later.summary)).rows
            #expect(laterSummary.contains { $0["key"] == "pending_over_30_days" && $0["count"] == "1" })
            let before = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.appendingPathComponent("before").path, asOf: Date(timeIntervalSince1970: 0)),
                from: ReportStore(fixture.connection.storage))
            let beforeDetail = try StrictCSV(try ReportFixture.bytes(before.detail)).rows
            #expect(beforeDetail.allSatisfy { ($0["ledger_entry_id"] ?? "x").isEmpty })
            #expect(!(try StrictCSV(try ReportFixture.bytes(before.summary)).rows.contains { $0["section"] == "recovery" }))
        }
    }
}
