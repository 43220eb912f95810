public import Foundation
import Storage

/// RFC 3339 UTC timestamps for reports: `2026-10-03T14:21:07Z`, with the fraction only when there is one
/// (`2026-10-03T14:21:07.123Z`), trailing zeros dropped. Exact to PostgreSQL's microsecond.
public enum ReportTimestamp {
    public static func format(_ date: Date) -> String {
        var text = ReportStore.timestamp(date)  // YYYY-MM-DDTHH:MM:SS.ffffffZ
        text.removeLast()  // Z
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return text + "Z"
    }

    /// The Monday (UTC) of `date`'s ISO week, as days since 1970-01-01: the bucket of the weekly refund chart.
    public static func weekStartDay(_ date: Date) -> Int64 {
        let days = Int64((date.timeIntervalSince1970 / 86_400).rounded(.down))
        // 1970-01-01 was a Thursday: (days + 3) mod 7 is the number of days since Monday.
        return days - (((days + 3) % 7) + 7) % 7
    }

    /// A day number as YYYY-MM-DD.
    public static func day(_ days: Int64) -> String {
        String(format(Date(timeIntervalSince1970: Double(days) * 86_400)).prefix(10))
    }

    /// The Monday (UTC) of `date`'s ISO week, as YYYY-MM-DD.
    public static func weekStart(_ date: Date) -> String { day(weekStartDay(date)) }
}
