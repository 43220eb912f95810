import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Queries, binds and decoding")
struct QueryTests {
    @Test("interpolated values become bind parameters, never SQL text")
    func bindsNotText() throws {
        let hostile = "O'Reilly'); DROP TABLE x; --"
        let query: PostgresQuery = "SELECT \(hostile)::text AS value, \(Int64(42)) AS number"
        #expect(query.sql == "SELECT $1::text AS value, $2 AS number")
        #expect(query.binds == [hostile, "42"])
        #expect(query.description == query.sql)

        let connection = try TestPostgres.connect()
        let row = try #require(try connection.query(query).first)
        #expect(try row.decode(String.self, column: "value") == hostile)
        #expect(try row.decode(Int64.self, column: "number") == 42)
    }

    @Test("a stored enumeration is read by its raw value; a value this binary does not know is an error naming it, never a default")
    func storedEnumerations() throws {
        enum Kind: String { case clawback, review }
        let connection = try TestPostgres.connect()
        let row = try #require(try connection.query("SELECT 'review' AS known, 'refund_v2' AS unknown, NULL::text AS absent").first)
        #expect(try row.decode(Kind.self, column: "known") == .review)
        #expect(try row.decode(Kind?.self, column: "absent") == nil)
        #expect {
            try row.decode(Kind.self, column: "unknown")
        } throws: { error in
            "\(error)".contains("column \"unknown\" holds Kind 'refund_v2', which this version of clawback does not know")
        }
        #expect(throws: PostgresError.self) { try row.decode(Kind.self, column: "absent") }
    }

    @Test("a composed fragment keeps its binds, renumbered, and leaves quoted \"$1\" text alone")
    func composedFragments() throws {
        let filter: PostgresQuery = "value = \(Int64(7)) AND label <> '$1' AND \"$2col\" IS NULL OR label = \("x'y")"
        let query: PostgresQuery = "SELECT \("first") AS a WHERE \(fragment: filter) AND \(Int64(9)) > 0"
        #expect(query.sql == "SELECT $1 AS a WHERE value = $2 AND label <> '$1' AND \"$2col\" IS NULL OR label = $3 AND $4 > 0")
        #expect(query.binds == ["first", "7", "x'y", "9"])

        let connection = try TestPostgres.connect()
        let sum: PostgresQuery = "\(Int64(2))::bigint + \(Int64(3))::bigint"
        let row = try #require(try connection.query("SELECT \(Int64(10))::bigint * (\(fragment: sum))").first)
        #expect(try row.decode(Int64.self, at: 0) == 50)
    }

    @Test("decodes text, Int64, Int32, Bool, Date, UUID and arrays, and tells NULL from the empty string")
    func typedDecoding() throws {
        let connection = try TestPostgres.connect()
        let uuid = UUID()
        let row = try #require(
            try connection.query(
                """
                SELECT 'héllo'::text, 9007199254740993::bigint, (-2147483648)::int4, true, false,
                       '2026-11-21 05:26:42.123456+00'::timestamptz, \(uuid)::uuid,
                       ''::text, NULL::text, ARRAY['a', 'b,c', 'd"e', '']::text[]
                """
            ).first)
        #expect(try row.decode(String.self, at: 0) == "héllo")
        #expect(try row.decode(Int64.self, at: 1) == 9_007_199_254_740_993)
        #expect(try row.decode(Int32.self, at: 2) == Int32.min)
        #expect(try row.decode(Bool.self, at: 3) == true)
        #expect(try row.decode(Bool.self, at: 4) == false)
        let date = try row.decode(Date.self, at: 5)
        #expect(abs(date.timeIntervalSince1970 - 1_795_238_802.123456) < 0.000_001)
        #expect(try row.decode(UUID.self, at: 6) == uuid)
        #expect(try row.decode(String?.self, at: 7) == "")
        #expect(try row.decode(String?.self, at: 8) == nil)
        #expect(try row.decode([String].self, at: 9) == ["a", "b,c", "d\"e", ""])
    }

    @Test("binds round-trip: dates with microseconds, NULL, UUID, arrays")
    func bindRoundTrip() throws {
        let connection = try TestPostgres.connect()
        let date = Date(timeIntervalSince1970: 1_700_000_000.654321)
        let missing: String? = nil
        let list = ["com.studio.one", "x\"y", "back\\slash", "", "é, {brace} ☃", "NULL"]
        let row = try #require(
            try connection.query(
                "SELECT \(date)::timestamptz, \(missing)::text IS NULL, \(list)::text[], \(true)::bool"
            ).first)
        #expect(abs(try row.decode(Date.self, at: 0).timeIntervalSince1970 - date.timeIntervalSince1970) < 0.000_001)
        #expect(try row.decode(Bool.self, at: 1))
        #expect(try row.decode([String].self, at: 2) == list)
        #expect(try row.decode(Bool.self, at: 3))
    }

    @Test("decoding NULL into a non-optional, or text into a number, is a typed error naming the column")
    func decodingErrors() throws {
        let connection = try TestPostgres.connect()
        let row = try #require(try connection.query("SELECT NULL::text AS missing, 'secret-value' AS word").first)
        let nullError = try #require(throws: PostgresError.self) { try row.decode(String.self, column: "missing") }
        #expect(nullError.code == .decoding)
        #expect(nullError.description.contains("\"missing\""))
        let typeError = try #require(throws: PostgresError.self) { try row.decode(Int64.self, column: "word") }
        #expect(typeError.description.contains("\"word\""))
        #expect(!typeError.description.contains("secret-value"), "values may be personal data")
        #expect(throws: PostgresError.self) { try row.decode(String.self, column: "nope") }
    }

    @Test("a unique violation carries SQLSTATE 23505, the server's message and detail; its description quotes no row value")
    func uniqueViolation() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE unique_test (id text PRIMARY KEY)")
        try connection.execute("INSERT INTO unique_test VALUES (\("first"))")
        let secret = "player-personal-7731"
        try connection.execute("INSERT INTO unique_test VALUES (\(secret))")
        let error = try #require(throws: PostgresError.self) {
            try connection.execute("INSERT INTO unique_test VALUES (\(secret))")
        }
        #expect(error.code == .server)
        #expect(error.sqlState == "23505")
        #expect(error.isUniqueViolation)
        #expect(error.message.contains("unique_test_pkey"))
        #expect(error.detail?.contains(secret) == true, "the server's DETAIL quotes the key")
        #expect(!error.description.contains(secret), "what is logged must not carry a player's row")
        #expect(!"\(error)".contains(secret))
        #expect(error.debugDescription.contains(secret), "a developer still sees it")
        #expect(error.query == "INSERT INTO unique_test VALUES ($1)")
        // The session is still usable after the error: every result was drained.
        #expect(try connection.query("SELECT count(*) FROM unique_test").first?.decode(Int.self, at: 0) == 2)
    }

    @Test("affected rows and command tags are reported")
    func affectedRows() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE counted (n int); INSERT INTO counted SELECT generate_series(1, 5)")
        #expect(try connection.execute("UPDATE counted SET n = n + 1 WHERE n > \(2)") == 3)
        #expect(try connection.execute("DELETE FROM counted") == 5)
    }

    @Test("a statement that outlives the deadline is cancelled by the server with 57014 and the session lives on")
    func serverStatementTimeout() throws {
        let connection = try TestPostgres.connect(statementTimeout: .milliseconds(300))
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT pg_sleep(30)") }
        #expect(error.code == .timedOut)
        #expect(error.sqlState == "57014")  // without the deadline, pg_sleep(30) would simply succeed
        #expect(try connection.query("SELECT 1").first?.decode(Int.self, at: 0) == 1)
    }

    @Test("when the server does not enforce the deadline, the client cancels the statement itself")
    func clientSideDeadline() throws {
        let connection = try TestPostgres.connect(statementTimeout: .milliseconds(500))
        // Take the server's own timeout away, leaving only the client's deadline (timeout + 1 s).
        try connection.query("SELECT set_config('statement_timeout', '0', false)")
        let error = try #require(throws: PostgresError.self) { try connection.query("SELECT pg_sleep(30)") }
        #expect(error.code == .timedOut)
        #expect(error.isQueryCanceled)  // without the client's deadline, pg_sleep(30) would simply succeed
        #expect(try connection.query("SELECT 2").first?.decode(Int.self, at: 0) == 2)
    }

    @Test("a script runs several statements; an error in it is reported")
    func scripts() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE s1 (a int); CREATE TEMP TABLE s2 (b int);")
        let error = try #require(throws: PostgresError.self) {
            try connection.executeScript(unsafeSQL: "INSERT INTO s1 VALUES (1); SELECT * FROM missing_table;")
        }
        #expect(error.sqlState == "42P01")
    }
}
