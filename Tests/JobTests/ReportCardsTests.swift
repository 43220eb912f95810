import AppStoreSimulator
import Foundation
import Reconciliation
import Reports
import Storage
import TestSupport
import Testing

/// The HTML page's cards and per-currency headline say what the CSVs say, in a run's report and in the
/// window's merged report alike: units taken back, given back and net, and per currency the value taken
/// back, given back, owed, recovered and still pending.
@Suite("Report cards agree with the CSVs")
struct ReportCardsTests {
    /// The value of the card `id` on the page.
    static func card(_ id: String, in html: String) -> Int64? {
        guard let range = html.range(of: "id=\"\(id)\"><div class=\"value\">") else { return nil }
        return Int64(html[range.upperBound...].prefix { $0 != "<" })
    }

    /// The headline table's cells for `currency`, in column order.
    static func headline(_ currency: String, in html: String) -> [String] {
        guard let row = html.range(of: "<tr data-currency=\"\(currency)\">") else { return [] }
        let end = html[row.upperBound...].range(of: "</tr>")?.lowerBound ?? html.endIndex
        return html[row.upperBound..<end].components(separatedBy: "<td class=\"num\">").dropFirst().map { String($0.prefix { $0 != "<" }) }
    }

    static func summary(_ path: String) throws -> [[String: String]] {
        try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: path)))).rows
    }

    /// The page's cards and headline against the summary CSV's rows.
    static func expectAgreement(_ files: ReportFiles, what: String) throws {
        let html = try String(contentsOfFile: try #require(files.html), encoding: .utf8)
        let rows = try summary(files.summary)
        func units(_ key: String) -> Int64 {
            rows.filter { $0["section"] == "movement" && $0["key"] == key }.reduce(0) { $0 + (Int64($1["units"] ?? "") ?? 0) }
        }
        #expect(card("taken", in: html) == units("taken_back"), "\(what): taken back")
        #expect(card("given", in: html) == units("given_back"), "\(what): given back")
        #expect(card("net", in: html) == units("net"), "\(what): net")
        for row in rows where row["section"] == "movement" && row["key"] == "taken_back" && row["currency"]?.isEmpty == false {
            let currency = row["currency"] ?? ""
            func amount(_ section: String, _ key: String) -> String? {
                rows.first { $0["section"] == section && $0["key"] == key && $0["currency"] == currency }?["amount_informational"]
            }
            func recovery(_ key: String) -> Decimal {
                rows.filter { $0["section"] == "recovery" && $0["key"] == key && $0["currency"] == currency }
                    .reduce(Decimal(0)) { $0 + (Decimal(string: $1["amount_informational"] ?? "") ?? 0) }
            }
            let cells = headline(currency, in: html)
            #expect(cells.count == 6, "\(what): the \(currency) headline")
            guard cells.count == 6 else { continue }
            #expect(cells[0] == amount("movement", "taken_back") && cells[1] == amount("movement", "given_back"), "\(what) \(currency)")
            #expect(cells[2] == amount("movement", "net"), "\(what) \(currency)")
            #expect(Decimal(string: cells[3]) == recovery("owed"), "\(what) \(currency): owed")
            #expect(Decimal(string: cells[4]) == recovery("recovered") + recovery("partial"), "\(what) \(currency): recovered")
            #expect(Decimal(string: cells[5]) == recovery("pending"), "\(what) \(currency): pending")
        }
    }

    @Test("a run's report and the window's merged report agree with their CSVs card by card; given back is never 0 when units were")
    func cardsAgree() async throws {
        var records = (0..<60).map { JobFixture.purchase(String(4_000_000_100 + $0), daysAgo: Double(20 + $0 % 20)) }
        for index in stride(from: 0, to: 60, by: 4) { records[index].refund = JobFixture.refund(daysAgo: 8) }
        records[8].refund = JobFixture.refund(daysAgo: 8, type: "REFUND_PRORATED", percentage: 40_000)
        try await TestPostgres.withScratchDatabaseAsync { database in
            try await JobFixture.with(database: database, transactions: records) { fixture in
                try fixture.grant(records)
                let first = try await fixture.run()
                // The game applies some of what the first run asked.
                _ = try fixture.connection.query(
                    """
                    SELECT clawback.acknowledge_clawback(entry_id, 'game-1', 'applied')
                    FROM clawback.ledger WHERE kind = 'clawback' ORDER BY entry_id LIMIT 6
                    """)
                // Apple then reverses four of those refunds: the next run gives their units back.
                var reversed: [WorldLine] = []
                for index in [0, 4, 12, 16] {
                    var record = records[index]
                    record.refund?.reversedDate = Date() - 86_400
                    reversed.append(.transaction(record))
                }
                fixture.simulator.update(reversed)
                let second = try await fixture.run()
                // A third run finds the reversed purchases settled (`ok`): flagged no more, but what the window's
                // runs took and gave back for them stays on the cards.
                let third = try await fixture.run()
                #expect(try fixture.verdicts(run: third.runID)[records[0].transactionId] == "ok")
                let given = try #require(
                    try fixture.connection.query("SELECT -sum(units) FROM clawback.ledger WHERE units < 0").first?.decode(Int64?.self, at: 0))
                #expect(given > 0)

                let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cards-\(UUID())")
                defer { try? FileManager.default.removeItem(at: directory) }
                let store = ReportStore(fixture.connection.storage)
                for (scope, what) in [
                    (ReportScope.run(first.runID), "the first run"), (.run(second.runID), "the second run"), (.run(third.runID), "the third run"),
                    (.window(fixture.window), "the window"),
                ] {
                    let files = try ReportGenerator.write(scope, options: .init(directory: directory.appendingPathComponent(what).path), from: store)
                    try Self.expectAgreement(files, what: what)
                }
                // The merged report nets each purchase's position, but not what was given back.
                let window = try ReportGenerator.write(
                    .window(fixture.window), options: .init(directory: directory.appendingPathComponent("again").path), from: store)
                let html = try String(contentsOfFile: try #require(window.html), encoding: .utf8)
                #expect(Self.card("given", in: html) == given)
                let taken = try fixture.connection.query("SELECT sum(units) FROM clawback.ledger WHERE units > 0").first?.decode(Int64.self, at: 0)
                #expect(Self.card("taken", in: html) == taken && Self.card("net", in: html) == (taken ?? 0) - given)
            }
        }
    }
}
