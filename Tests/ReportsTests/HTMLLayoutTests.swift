import Foundation
import Reconciliation
import Testing

@testable import Reports
@testable import Storage

/// The HTML summary as finance opens it, in a real browser (headless Chromium, a Debian test package): at a
/// laptop's 1280 px and a desktop's 1920 px the page never scrolls sideways, whatever the report holds. Wide
/// tables scroll inside their own box, their first column pinned. Screenshots go to .build/test-artifacts/.
@Suite("HTML summary in Chromium")
struct HTMLLayoutTests {
    /// A report with every wide part at its widest: the recovery table's 14 columns with amounts, the refund
    /// requests' 13, long product and app ids, 40 weeks of refunds, long review details.
    static func widePage() throws -> String {
        let asOf = Date(timeIntervalSince1970: 1_793_000_000)
        var totals = ReportTotals(asOf: asOf)
        var lines: [RefundRequestLine] = []
        for index in 0..<120 {
            let product = "com.example.clawback.game.premium_gem_bundle_\(index % 12)_with_a_long_identifier"
            let bundle = "com.example.clawback.a-game-with-a-rather-long-bundle-identifier-\(index % 3)"
            let purchasedAt = asOf - Double(index) * 2.3 * 86_400
            let outcome: AcknowledgementOutcome? = [nil, .applied, .partial, .waived, .superseded][index % 5]
            try totals.add(
                FlaggedPurchase(
                    runID: 1, bundleID: bundle, environment: "Production", transactionID: String(2_000_000_000_000_000 + index),
                    originalTransactionID: String(2_000_000_000_000_000 + index), playerID: "player-\(index)", productID: product,
                    unitsGranted: 12_000, unitsClawedBack: index % 7 == 0 ? 0 : 12_000, unitsChange: index % 7 == 0 ? -12_000 : 12_000,
                    verdict: index % 9 == 0 ? .unknownToApple : index % 7 == 0 ? .refundReversed : .refunded,
                    action: index % 9 == 0 ? .flaggedForReview : .clawbackCreated, revocationDate: purchasedAt + 86_400,
                    revocationType: "REFUND_FULL", revocationReason: 1, purchasedAt: purchasedAt, storePriceMilli: 1_234_560_000,
                    storeCurrency: ["USD", "EUR", "JPY", "BHD"][index % 4], storefront: "USA",
                    detail: String(repeating: "Apple's signed transaction disagrees with the grant in several fields; ", count: 3),
                    position: LedgerPosition(
                        entryID: Int64(index), units: index % 7 == 0 ? -12_000 : 12_000, createdAt: asOf - Double(index) * 86_400,
                        outcome: outcome, unitsApplied: outcome == nil ? nil : 12_000, acknowledgedAt: outcome == nil ? nil : asOf)))
            lines.append(
                RefundRequestLine(
                    notificationUUID: UUID().uuidString, bundleID: bundle, environment: "Production", transactionID: String(index),
                    productID: product, reason: "UNINTENDED_PURCHASE", requestedAt: purchasedAt, deadline: purchasedAt + 43_200,
                    state: RefundRequestState.allCases[index % RefundRequestState.allCases.count], answeredAt: nil, deliveryStatus: nil,
                    consumptionPercentage: nil, refundPreference: nil, unitsGranted: 12_000, unitsConsumed: nil, appleErrorCode: nil,
                    lastError: nil, outcome: index % 2 == 0 ? .declined : .refunded, outcomeAt: purchasedAt + 90_000))
        }
        let runs = (1...12).map {
            ReportRun(
                runID: Int64($0), windowStart: asOf - 90 * 86_400, windowEnd: asOf, shardIndex: $0 % 4, shardCount: 4, strategy: .transactionInfo,
                status: .succeeded)
        }
        let input = SummaryReport.Input(
            window: "2026-07-01..2026-10-01", runs: runs, verdictCounts: [.refunded: 90, .unknownToApple: 14, .refundReversed: 16, .ok: 9_000],
            ledgerEntries: 120, totals: totals, refundRequests: lines)
        return HTMLSummary.page(input, detailFileName: "clawback-2026-07-01..2026-10-01-runs-1-12-detail.csv")
    }

    @Test("no sideways scroll at 1280 and 1920 px; every wide table scrolls in its own box; the page still prints whole", arguments: [1280, 1920])
    func fitsTheScreen(width: Int) throws {
        let page = try Self.widePage()
        #expect(page.contains("@media print"), "printing shows the whole of every table")
        let overflow = try Chromium.horizontalOverflow(of: page, width: width, height: 900, screenshot: "html-summary-\(width).png")
        #expect(overflow <= 0, "the page scrolls sideways by \(overflow) px at \(width) px")
    }
}

/// The page measured in headless Chromium (through `HTMLSummaryTests.chromium`).
enum Chromium {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// How many pixels `page` scrolls sideways in a window of `width` × `height`: the page without its
    /// Content-Security-Policy (which forbids scripts, rightly) and with one script that writes
    /// `scrollWidth - clientWidth` into the DOM, which `--dump-dom` prints. A screenshot of the page as it
    /// is goes to .build/test-artifacts/, for a person to look at.
    static func horizontalOverflow(of page: String, width: Int, height: Int, screenshot: String) throws -> Int {
        let chromium = ProcessInfo.processInfo.environment["CLAWBACK_CHROMIUM"] ?? "/usr/bin/chromium"
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-layout-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let measured =
            page
            .replacingOccurrences(of: #"<meta http-equiv="Content-Security-Policy"[^>]*>"#, with: "", options: .regularExpression)
            .replacingOccurrences(
                of: "</body>",
                with: "<script>document.documentElement.setAttribute('data-overflow', "
                    + "String(document.documentElement.scrollWidth - document.documentElement.clientWidth))</script></body>")
        let file = directory.appendingPathComponent("measured.html")
        try measured.write(to: file, atomically: true, encoding: .utf8)
        let (dom, _) = try HTMLSummaryTests.chromium(chromium, ["--window-size=\(width),\(height)", "--dump-dom", file.absoluteString])
        guard let match = dom.firstMatch(of: #/data-overflow="(-?\d+)"/#), let overflow = Int(match.1) else {
            throw Failure(description: "Chromium's DOM has no measurement: \(dom.prefix(300))")
        }
        let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/test-artifacts")
            .standardizedFileURL
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let original = directory.appendingPathComponent("page.html")
        try page.write(to: original, atomically: true, encoding: .utf8)
        _ = try HTMLSummaryTests.chromium(
            chromium,
            ["--window-size=\(width),\(height)", "--screenshot=\(artifacts.appendingPathComponent(screenshot).path)", original.absoluteString])
        return overflow
    }
}
