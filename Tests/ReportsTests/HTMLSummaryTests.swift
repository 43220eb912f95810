import Foundation
import Postgres
import Reconciliation
import Storage
import TestSupport
import Testing

@testable import Reports

@Suite("HTML summary")
struct HTMLSummaryTests {
    @Test("hostile ids are escaped; nothing on the page can reach the network")
    func escapingAndNoNetwork() {
        var totals = ReportTotals(asOf: Date())
        try? totals.add(
            FlaggedPurchase(
                runID: 1, bundleID: "b", environment: "Production", transactionID: "<script>alert(1)</script>", originalTransactionID: "o",
                playerID: "\"><img src=x onerror=alert(1)>", productID: "p&q", unitsGranted: 1, verdict: .unknownToApple,
                action: .flaggedForReview, purchasedAt: Date(timeIntervalSince1970: 0)))
        let input = SummaryReport.Input(
            window: "2026-10", runs: [ReportRun(runID: 1, windowStart: Date(), windowEnd: Date(), strategy: .transactionInfo, status: .succeeded)],
            verdictCounts: [.unknownToApple: 1], ledgerEntries: 1, totals: totals)
        let page = HTMLSummary.page(input, detailFileName: "x.csv")
        #expect(!page.contains("<script"))
        #expect(!page.contains("<img"))
        #expect(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(page.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"))
        #expect(page.contains("p&amp;q"))
        #expect(page.contains("default-src 'none'"))
        #expect(!page.contains("http://") && !page.contains("https://"))
    }

    @Test("a quote followed by a combining mark is still escaped (scalar by scalar), in HTML and in SQL identifiers")
    func combiningMarks() {
        let hostile = "x\"\u{301} onmouseover=alert(1) '\u{301}"
        let escaped = HTMLSummary.escape(hostile)
        #expect(!escaped.unicodeScalars.contains("\""))
        #expect(!escaped.unicodeScalars.contains("'"))
        #expect(escaped.contains("&quot;\u{301}"))
        #expect(PostgresQuery.quoteIdentifier("a\"\u{301}b") == "\"a\"\"\u{301}b\"")
    }

    @Test("the month-end pack: the PDF Chromium prints holds every section of the page and its totals (pdftotext)")
    func printsToPDF() throws {
        let pdftotext = "/usr/bin/pdftotext"
        try #require(
            FileManager.default.isExecutableFile(atPath: pdftotext), "pdftotext is needed (Debian's poppler-utils; Jobs/local/test.sh installs it)")
        try ReportFixture.with { fixture in
            let run = try fixture.run(status: "succeeded", grantsInScope: 4)
            try fixture.check(.init(transactionID: "r1"), run: run)
            try fixture.check(.init(transactionID: "r2", playerID: "p2", revocationDate: Date(timeIntervalSince1970: 1_791_900_000)), run: run)
            try fixture.check(
                .init(transactionID: "r4", playerID: "p4", verdict: "unknown_to_apple", action: "flagged_for_review", ledgerUnits: nil), run: run)
            let files = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path, html: false, pdf: true), from: ReportStore(fixture.connection.storage))
            let pdf = try #require(files.pdf)
            #expect(files.html != nil && files.all.contains(pdf))
            #expect(try Data(contentsOf: URL(fileURLWithPath: pdf)).prefix(5) == Data("%PDF-".utf8))
            let converted = try CommandRunner.run(executable: URL(fileURLWithPath: pdftotext), ["-layout", pdf, "-"])
            #expect(converted.status == 0 && !converted.killedBySignal, "pdftotext: \(converted.standardError)")
            let text = converted.standardOutput
            for section in [
                "Purchases checked", "Units taken back", "Units given back", "Net units taken back", "Per currency", "Refunds per week",
                "Refunds by product", "Refunds by currency", "By store", "Owed and recovered", "Refund requests", "Needs review",
            ] {
                #expect(text.contains(section), "the PDF lacks \(section)")
            }
            #expect(text.contains("19.98"))  // two refunds of 9.99 USD
            #expect(text.contains("1200"))  // the units taken back
            #expect(text.contains("r4"))  // the purchase needing review
        }
    }

    @Test("headless Chromium loads the page without a console message and shows the totals")
    func rendersInChromium() throws {
        let chromium = ProcessInfo.processInfo.environment["CLAWBACK_CHROMIUM"] ?? "/usr/bin/chromium"
        try #require(
            FileManager.default.isExecutableFile(atPath: chromium),
            "headless Chromium is needed at \(chromium) (Debian's chromium package; Jobs/local/test.sh installs it)")
        try ReportFixture.with { fixture in
            let run = try fixture.run(status: "incomplete", grantsInScope: 5)
            try fixture.check(.init(transactionID: "r1"), run: run)
            try fixture.check(.init(transactionID: "r2", playerID: "p2", revocationDate: Date(timeIntervalSince1970: 1_791_900_000)), run: run)
            try fixture.check(.init(transactionID: "r3", verdict: "unverified", action: "retry_next_run", ledgerUnits: nil), run: run)
            try fixture.check(
                .init(
                    transactionID: "r4", playerID: "<b>bold</b>", verdict: "unknown_to_apple", action: "flagged_for_review",
                    ledgerUnits: nil), run: run)
            try fixture.check(.init(transactionID: "r5", verdict: "ok", action: "none", revocationDate: nil, ledgerUnits: nil), run: run)
            let files = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path), from: ReportStore(fixture.connection.storage))
            let html = try #require(files.html)
            let url = URL(fileURLWithPath: html).absoluteString

            let (dom, log) = try Self.chromium(chromium, ["--dump-dom", url])
            let console = log.split(separator: "\n").filter { $0.contains(":CONSOLE") }
            #expect(console.isEmpty, "the page logged: \(console.joined(separator: "\n"))")
            #expect(dom.contains("<div class=\"card\" id=\"checked\"><div class=\"value\">5</div>"))
            #expect(dom.contains("<div class=\"card\" id=\"refunds\"><div class=\"value\">2</div>"))
            #expect(dom.contains("<div class=\"card\" id=\"taken\"><div class=\"value\">1200</div>"))
            #expect(dom.contains("<div class=\"card\" id=\"given\"><div class=\"value\">0</div>"))
            #expect(dom.contains("<div class=\"card warn\" id=\"unverified\"><div class=\"value\">1</div>"))
            #expect(dom.contains("id=\"incomplete\""))
            #expect(dom.contains("&lt;b&gt;bold&lt;/b&gt;"))
            #expect(dom.contains("19.98"))  // two refunds of 9.99 USD
            #expect(dom.contains("<svg role=\"img\" aria-label=\"Refunds per week\""))

            // A screenshot at a laptop's size, for a person to look at; it stays out of the repository.
            let screenshot = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-report-\(run).png").path
            _ = try Self.chromium(chromium, ["--window-size=1366,900", "--screenshot=\(screenshot)", url])
            let size = (try FileManager.default.attributesOfItem(atPath: screenshot)[.size] as? Int) ?? 0
            #expect(size > 10_000)
            try? FileManager.default.removeItem(atPath: screenshot)
        }
    }

    /// Runs headless Chromium with logging on stderr; returns stdout and stderr.
    static func chromium(_ path: String, _ arguments: [String]) throws -> (String, String) {
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-chromium-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: profile) }
        let result = try CommandRunner.run(
            executable: URL(fileURLWithPath: path),
            ["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--user-data-dir=\(profile.path)"] + arguments)
        return (result.standardOutput, result.standardError)
    }
}
