public import Foundation

/// The purchase dates a run covers: [start, end), in UTC.
public struct ReconciliationWindow: Sendable, Equatable, CustomStringConvertible {
    public let start: Date
    public let end: Date

    public init(start: Date, end: Date) throws(WindowError) {
        guard end > start else { throw WindowError("the window's end must be after its start") }
        self.start = start
        self.end = end
    }

    static var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? TimeZone(secondsFromGMT: 0) ?? .current
        return calendar
    }

    /// The default: the `months` calendar months before the one containing `now` (a run on 2026-12-01
    /// covers 2026-09-01 up to 2026-12-01).
    public static func monthsBefore(_ now: Date, months: Int = 3) -> ReconciliationWindow {
        let calendar = utc
        let thisMonth = calendar.dateInterval(of: .month, for: now)?.start ?? now
        let start = calendar.date(byAdding: .month, value: -months, to: thisMonth) ?? thisMonth
        return ReconciliationWindow(unchecked: start, thisMonth)
    }

    /// The window the next monthly run will cover: the `months` calendar months up to the end of the one
    /// containing `now` (a daily run on 2026-11-25 covers 2026-09-01 up to 2026-12-01, as the run of
    /// 2026-12-01 will), so that a report over that window merges the daily runs with the monthly one.
    public static func nextMonthly(after now: Date, months: Int = 3) -> ReconciliationWindow {
        let calendar = utc
        let thisMonth = calendar.dateInterval(of: .month, for: now)?.start ?? now
        let nextMonth = calendar.date(byAdding: .month, value: 1, to: thisMonth) ?? now
        return monthsBefore(nextMonth, months: months)
    }

    /// The windows a daily run checks, oldest first: every monthly run's window that still holds a kept
    /// grant no later window holds, then the next monthly run's (`nextMonthly`). Grants are kept
    /// `retentionMonths` (a monthly partition is dropped once it lies entirely before now less that), one or
    /// more months longer than a window, so a refund of a purchase older than the next monthly run's window
    /// (a late refund, a chargeback) is still checked, under the window of the monthly run that covered it
    /// last, where that window's report finds it. On 2026-11-25 with three-month windows kept four months:
    /// 2026-07-01..2026-10-01, 2026-08-01..2026-11-01 and 2026-09-01..2026-12-01.
    public static func dailyWindows(after now: Date, months: Int = 3, retentionMonths: Int = 4) -> [ReconciliationWindow] {
        let calendar = utc
        let thisMonth = calendar.dateInterval(of: .month, for: now)?.start ?? now
        // The first month whose partition is not entirely before now less the retention.
        let horizon = calendar.date(byAdding: .month, value: -retentionMonths, to: now) ?? now
        let keptFrom = calendar.dateInterval(of: .month, for: horizon)?.start ?? horizon
        var windows = [nextMonthly(after: now, months: months)]
        var monthEnd = thisMonth
        while true {
            let window = monthsBefore(monthEnd, months: months)
            guard window.start >= keptFrom, window.start < windows[0].start else { break }
            windows.insert(window, at: 0)
            monthEnd = calendar.date(byAdding: .month, value: -1, to: monthEnd) ?? monthEnd
        }
        return windows
    }

    /// One calendar month, from "YYYY-MM".
    public static func month(_ text: String) throws(WindowError) -> ReconciliationWindow {
        let parts = text.split(separator: "-")
        guard parts.count == 2, parts[0].count == 4, parts[1].count == 2, let year = Int(parts[0]), let month = Int(parts[1]),
            (1...12).contains(month), year >= 2008
        else { throw WindowError("\"\(text)\" is not a month in the form YYYY-MM") }
        let calendar = utc
        guard let start = calendar.date(from: DateComponents(year: year, month: month, day: 1)),
            let end = calendar.date(byAdding: .month, value: 1, to: start)
        else { throw WindowError("\"\(text)\" is not a month in the form YYYY-MM") }
        return ReconciliationWindow(unchecked: start, end)
    }

    /// A date "YYYY-MM-DD" (UTC midnight) or an RFC 3339 timestamp.
    public static func date(_ text: String) throws(WindowError) -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withFullDate]
        formatter.timeZone = TimeZone(identifier: "UTC")
        if let date = formatter.date(from: text) { return date }
        throw WindowError("\"\(text)\" is not a date (YYYY-MM-DD) or an RFC 3339 timestamp")
    }

    private init(unchecked start: Date, _ end: Date) {
        self.start = start
        self.end = end
    }

    /// `2026-09-01..2026-12-01`, or `2026-10` for exactly one calendar month: used in file names and keys.
    public var label: String {
        let calendar = Self.utc
        let components = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: start)
        if components.day == 1, components.hour == 0, components.minute == 0, components.second == 0,
            calendar.date(byAdding: .month, value: 1, to: start) == end, let year = components.year, let month = components.month
        {
            return String(format: "%04d-%02d", year, month)
        }
        return Self.day(start) + ".." + Self.day(end)
    }

    public var description: String { label }

    static func day(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        let components = utc.dateComponents([.hour, .minute, .second], from: date)
        formatter.formatOptions =
            components.hour == 0 && components.minute == 0 && components.second == 0
            ? [.withFullDate] : [.withInternetDateTime]
        return formatter.string(from: date)
    }
}

public struct WindowError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
