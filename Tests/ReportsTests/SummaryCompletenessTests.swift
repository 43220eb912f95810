import Foundation
import Reconciliation
import Reports
import Storage
import Testing

@Suite("Summary completeness")
struct SummaryCompletenessTests {
    static func rows(_ run: ReportRun) -> [[String]] {
        let input = SummaryReport.Input(
            window: "2026-10", runs: [run], verdictCounts: [.noRefundReported: 4], ledgerEntries: 0,
            totals: ReportTotals(asOf: Date()))
        return SummaryReport.rows(input).map { $0.map { field in "\(field)" } }
    }

    @Test("a notifications run reports its rejected and missed notifications; every verdict, no_refund_reported included, has a row")
    func notifications() throws {
        let run = ReportRun(
            runID: 3, windowStart: Date(), windowEnd: Date(), strategy: .notifications, status: .succeeded,
            rejectedNotifications: 2, missedNotifications: 1)
        let rows = Self.rows(run)
        let rejected = rows.first { $0.contains { $0.contains("notifications_rejected") } }
        #expect(rejected?.contains { $0.contains("2") } == true)
        let note = try #require(SummaryReport.columns.firstIndex(of: "note"))
        #expect(rejected?[note].contains("asked per transaction") == true)
        #expect(rows.contains { $0.contains { $0.contains("notifications_missed") } })
        let verdict = rows.first { $0.contains { $0.contains("no_refund_reported") } }
        #expect(verdict?.contains { $0.contains("4") } == true)
        let other = Self.rows(ReportRun(runID: 4, windowStart: Date(), windowEnd: Date(), strategy: .transactionInfo, status: .succeeded))
        #expect(!other.contains { $0.contains { $0.contains("notifications_rejected") } })
    }
}
