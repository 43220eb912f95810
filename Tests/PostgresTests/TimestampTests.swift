import Foundation
import Postgres
import Testing

@Suite("timestamptz text codec")
struct TimestampTests {
    @Test(
        "parses PostgreSQL's ISO output with any offset",
        arguments: [
            ("2026-11-21 05:26:42+00", 1_795_238_802.0),
            ("2026-11-21 05:26:42.5+00", 1_795_238_802.5),
            ("2026-11-21T07:26:42+02", 1_795_238_802.0),
            ("2026-11-21 00:56:42-04:30", 1_795_238_802.0),
            ("2026-11-21 05:26:42Z", 1_795_238_802.0),
            ("1969-12-31 23:59:59+00", -1.0),
            ("2000-02-29 00:00:00+00", 951_782_400.0),
        ])
    func parse(text: String, seconds: Double) throws {
        let date = try #require(PostgresTimestamp.parse(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 0.000_001)
    }

    @Test("refuses what is not a timestamp", arguments: ["infinity", "2026-13-01 00:00:00+00", "2026-11-21", "", "2026-11-21 05:26:42"])
    func refuse(text: String) {
        #expect(PostgresTimestamp.parse(text) == nil)
    }

    @Test("formats RFC 3339 UTC with microseconds and round-trips")
    func format() throws {
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: 1_795_238_802.123456)) == "2026-11-21T05:26:42.123456Z")
        #expect(PostgresTimestamp.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59.000000Z")
        for seconds in stride(from: -86_400.0 * 400, to: 86_400.0 * 365 * 60, by: 86_400 * 37.3) {
            let date = Date(timeIntervalSince1970: seconds)
            let back = try #require(PostgresTimestamp.parse(PostgresTimestamp.format(date)))
            #expect(abs(back.timeIntervalSince1970 - seconds) < 0.000_001)
        }
    }
}
