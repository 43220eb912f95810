import Foundation
import Postgres
import Reports
import TestSupport
import Testing

/// Grants as a compromised or buggy grant path could write them: ids with quotes, commas, newlines, SQL,
/// spreadsheet formulas, markup and very long strings. The run must treat them as data (parameterised SQL,
/// percent-encoded URLs), flag them for review, and the reports must carry them exactly and safely.
@Suite("Hostile grant rows")
struct HostileInputTests {
    static let hostile = [
        "1'; DROP TABLE clawback.ledger; --", "=HYPERLINK(\"http://evil.example\",\"refund\")", "+1+1", "-2+3", "@SUM(A1:A9)",
        "\tTAB", "\rCR", "'quoted", "a,b,\"c\"", "line\nbreak", "crlf\r\nbreak", "<script>alert(1)</script>", "../../v1/notifications/history",
        "%00%2F?x=1#frag", "\u{202E}gnp.exe", "🦊 unicode", String(repeating: "9", count: 20_000),
    ]

    @Test("hostile ids, players and products: the run flags them for review, SQL stays intact, and the reports carry them exactly and formula-safe")
    func hostileRows() async throws {
        try await RunCrashTests.Setup.with(purchases: 30, seed: 51) { setup in
            try await TestPostgres.withScratchDatabaseAsync { database in
                try setup.prepare(database: database)
                let connection = try TestPostgres.connect(database: database)
                let purchasedAt = Date().addingTimeInterval(-86_400 * 10)
                for (index, text) in Self.hostile.enumerated() {
                    try connection.execute(
                        """
                        INSERT INTO clawback.grants (transaction_id, original_transaction_id, bundle_id, product_id, environment, player_id,
                            units_granted, purchased_at)
                        VALUES (\(text), \(text), \(setup.output.world.apps.keys.sorted()[0]), \(text), 'Production', \(text), \(100 + index), \(purchasedAt))
                        """)
                }
                let reports = setup.directory.appendingPathComponent("reports")
                let result = try await CommandRunner.run(
                    "clawback", setup.arguments + ["--report-dir", reports.path], environment: try setup.environment(database: database))
                #expect([0, 75].contains(result.status), "\(result.standardError)")
                #expect(try connection.query("SELECT to_regclass('clawback.ledger') IS NOT NULL").first?.decode(Bool.self, at: 0) == true)

                let checks = try connection.query(
                    "SELECT transaction_id, verdict, coalesce(detail, '') FROM clawback.checks WHERE transaction_id = ANY(\(Self.hostile))"
                ).rows
                #expect(checks.count == Self.hostile.count, "every hostile grant was checked")
                for row in checks {
                    let id = try row.decode(String.self, at: 0)
                    let verdict = try row.decode(String.self, at: 1)
                    #expect(!["ok", "refunded", "revoked"].contains(verdict), "\(id.prefix(40)): \(verdict)")
                }

                let files = try FileManager.default.contentsOfDirectory(atPath: reports.path)
                let detailName = try #require(files.first { $0.hasSuffix("-detail.csv") })
                let detail = try StrictCSV(Array(try Data(contentsOf: reports.appendingPathComponent(detailName))))
                var seen: Set<String> = []
                for record in detail.records {
                    for cell in record {
                        if let first = cell.unicodeScalars.first {
                            #expect(!["=", "+", "-", "@", "\t", "\r"].contains(first), "a cell could run as a formula: \(cell.prefix(40))")
                        }
                    }
                    seen.insert(FormulaGuard.restore(record[detail.header.firstIndex(of: "transaction_id") ?? 0]))
                }
                let flagged = Set(
                    checks.filter { (try? $0.decode(String.self, at: 1)) != "unverified" }.compactMap { try? $0.decode(String.self, at: 0) })
                #expect(flagged.isSubset(of: seen), "a flagged hostile grant is missing from the detail report or changed on the way")
                #expect(
                    flagged.count >= Self.hostile.count - 1,
                    "\(checks.count) checked, \(flagged.count) flagged: \(checks.prefix(3).map { (try? $0.decode(String.self, at: 2)) ?? "" })")

                let htmlName = try #require(files.first { $0.hasSuffix(".html") })
                let html = try String(contentsOf: reports.appendingPathComponent(htmlName), encoding: .utf8)
                #expect(!html.contains("<script"), "markup from a grant reached the HTML summary unescaped")
            }
        }
    }
}
