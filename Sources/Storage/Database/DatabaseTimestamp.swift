public import Foundation
import Postgres

/// Moments as clawback writes them to the database (RFC 3339, UTC, microseconds: `2026-11-27T08:20:25.123456Z`)
/// and reads them back (PostgreSQL's ISO text, or RFC 3339): what the commands print and accept.
public enum DatabaseTimestamp {
    public static func format(_ date: Date) -> String { PostgresTimestamp.format(date) }

    /// A moment in the database's text form (or ISO 8601's); nil when it is neither.
    public static func parse(_ text: String) -> Date? { PostgresTimestamp.parse(text) }
}
