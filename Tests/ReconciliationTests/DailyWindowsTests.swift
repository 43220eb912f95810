import Foundation
import Reconciliation
import Testing

/// The windows a daily run checks: every monthly run's window that still holds a kept grant no later window
/// holds, oldest first, then the next monthly run's.
@Suite("The daily run's windows")
struct DailyWindowsTests {
    static func day(_ text: String) throws -> Date { try ReconciliationWindow.date(text) }

    static func labels(_ windows: [ReconciliationWindow]) -> [String] { windows.map(\.label) }

    @Test("three-month windows kept four months: the two monthly runs' windows still holding kept grants, then the next one")
    func defaults() throws {
        let windows = ReconciliationWindow.dailyWindows(after: try Self.day("2026-11-25"), months: 3, retentionMonths: 4)
        #expect(Self.labels(windows) == ["2026-07-01..2026-10-01", "2026-08-01..2026-11-01", "2026-09-01..2026-12-01"])
        #expect(windows.last == ReconciliationWindow.nextMonthly(after: try Self.day("2026-11-25"), months: 3))
    }

    @Test("on the first of a month, after the monthly run, the oldest month is gone with its partition")
    func monthStart() throws {
        let windows = ReconciliationWindow.dailyWindows(after: try Self.day("2026-12-01T06:00:00Z"), months: 3, retentionMonths: 4)
        #expect(Self.labels(windows) == ["2026-08-01..2026-11-01", "2026-09-01..2026-12-01", "2026-10-01..2027-01-01"])
    }

    @Test(
        "over any date, window length and retention: the windows together hold every kept month once at least, the next monthly window last, no window starting before what is kept"
    )
    func property() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "UTC"))
        let origin = try Self.day("2025-01-01")
        for step in 0..<400 {
            let now = origin + Double(step) * 86_400 * 1.7 + Double(step % 24) * 3_600
            for months in 1...6 {
                for retention in months...(months + 4) {
                    let windows = ReconciliationWindow.dailyWindows(after: now, months: months, retentionMonths: retention)
                    #expect(windows.last == ReconciliationWindow.nextMonthly(after: now, months: months))
                    let horizon = try #require(calendar.date(byAdding: .month, value: -retention, to: now))
                    let kept = try #require(calendar.dateInterval(of: .month, for: horizon)).start
                    #expect(windows.first.map { $0.start >= kept } == true)
                    // Oldest first, each a window of `months` months, each starting a month after the one before.
                    for (earlier, later) in zip(windows, windows.dropFirst()) {
                        #expect(calendar.date(byAdding: .month, value: 1, to: earlier.start) == later.start)
                    }
                    // Every kept month lies in some window: the first starts where the grants are kept from, unless
                    // the next monthly window already reaches back that far.
                    let first = try #require(windows.first)
                    #expect(first.start == kept || (windows.count == 1 && first.start <= kept), "\(now) \(months) \(retention)")
                }
            }
        }
    }
}
