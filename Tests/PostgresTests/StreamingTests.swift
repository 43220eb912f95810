import Foundation
import Postgres
import TestSupport
import Testing

@Suite("Streaming large results")
struct StreamingTests {
    @Test("200,000 rows of 2 KB stream through in chunks without the process holding them")
    func boundedMemory() throws {
        let connection = try TestPostgres.connect()
        let rowCount = 200_000
        let rowBytes = 2048
        // 200,000 × 2 KB = 400 MB if held at once. Streaming may hold one chunk (1,000 rows ≈ 2 MB) plus
        // libpq's buffer; the bound leaves room for other tests running in parallel.
        let allowedGrowth = 120 * 1024 * 1024
        let baseline = ProcessMemory.residentBytes()
        var peak = baseline
        var seen = 0
        var sum: Int64 = 0
        var largestChunk = 0
        let delivered = try connection.stream(
            "SELECT n, repeat('x', \(rowBytes)) AS payload FROM generate_series(1, \(rowCount)) AS n", chunkSize: 1000
        ) { rows in
            largestChunk = max(largestChunk, rows.count)
            for row in rows {
                sum += try row.decode(Int64.self, at: 0)
                #expect(try row.decode(String.self, at: 1).utf8.count == rowBytes)
            }
            seen += rows.count
            peak = max(peak, ProcessMemory.residentBytes())
        }
        #expect(delivered == rowCount)
        #expect(seen == rowCount)
        #expect(sum == Int64(rowCount) * Int64(rowCount + 1) / 2)
        #expect(largestChunk == 1000)
        // Under AddressSanitizer, freed memory sits in its quarantine: resident size then measures the
        // sanitizer, and that run is there for memory errors, not for memory use.
        if !ProcessMemory.underAddressSanitizer {
            #expect(peak - baseline < allowedGrowth, "resident memory grew by \((peak - baseline) >> 20) MB while streaming")
        }
    }

    @Test("an error thrown by the consumer cancels the query and leaves the session usable")
    func consumerError() throws {
        struct Stop: Error {}
        let connection = try TestPostgres.connect()
        var chunks = 0
        #expect(throws: Stop.self) {
            try connection.stream("SELECT n FROM generate_series(1, 5000000) AS n", chunkSize: 100) { _ in
                chunks += 1
                if chunks == 3 { throw Stop() }
            }
        }
        #expect(chunks == 3)
        #expect(try connection.query("SELECT 7").first?.decode(Int.self, at: 0) == 7)
    }

    @Test("a server error mid-stream is a typed error; an empty result delivers nothing")
    func serverErrorAndEmpty() throws {
        let connection = try TestPostgres.connect()
        let error = try #require(throws: PostgresError.self) {
            try connection.stream("SELECT 1 / (n - 500) FROM generate_series(1, 1000) AS n", chunkSize: 100) { _ in }
        }
        #expect(error.sqlState == "22012")
        var called = false
        #expect(try connection.stream("SELECT 1 WHERE false") { _ in called = true } == 0)
        #expect(!called)
    }
}

@Suite("COPY FROM STDIN")
struct CopyTests {
    @Test("loads 100,000 rows")
    func bulkLoad() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE copied (id bigint, name text, note text, at timestamptz)")
        let at = Date(timeIntervalSince1970: 1_790_000_000)
        let loaded = try connection.copyIn(table: "copied", columns: ["id", "name", "note", "at"]) { writer in
            for id in 1...100_000 {
                try writer.appendRow([Int64(id), "item \(id)", id % 10 == 0 ? nil : "n\(id)", at])
            }
        }
        #expect(loaded == 100_000)
        let row = try #require(
            try connection.query("SELECT count(*), sum(id), count(note), min(at) FROM copied").first)
        #expect(try row.decode(Int.self, at: 0) == 100_000)
        #expect(try row.decode(Int64.self, at: 1) == 5_000_050_000)
        #expect(try row.decode(Int.self, at: 2) == 90_000)
        #expect(try row.decode(Date.self, at: 3) == at)
    }

    @Test("tabs, newlines, backslashes, quotes and non-ASCII survive; NULL stays NULL, empty stays empty")
    func escaping() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE tricky (id int, value text)")
        let values: [String?] = ["tab\there", "line\nbreak\r\n", "back\\slash\\N", "\"quoted\", comma", "", nil, "=SUM(A1)", "Ωmega 🎮"]
        try connection.copyIn(table: "tricky", columns: ["id", "value"]) { writer in
            for (index, value) in values.enumerated() { try writer.appendRow([index, value]) }
        }
        let rows = try connection.query("SELECT value FROM tricky ORDER BY id").rows
        #expect(try rows.map { try $0.decode(String?.self, at: 0) } == values)
    }

    @Test("a producer that throws aborts the COPY: nothing is loaded and the session lives on")
    func abort() throws {
        struct Bad: Error {}
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE aborted (id int)")
        #expect(throws: Bad.self) {
            try connection.copyIn(table: "aborted", columns: ["id"]) { writer in
                for id in 1...50_000 { try writer.appendRow([id]) }
                throw Bad()
            }
        }
        #expect(try connection.query("SELECT count(*) FROM aborted").first?.decode(Int.self, at: 0) == 0)
    }

    @Test("bad data is the server's typed error")
    func badData() throws {
        let connection = try TestPostgres.connect()
        try connection.executeScript(unsafeSQL: "CREATE TEMP TABLE typed (id int)")
        let error = try #require(throws: PostgresError.self) {
            try connection.copyIn(table: "typed", columns: ["id"]) { writer in try writer.appendRow(["not a number"]) }
        }
        #expect(error.sqlState == "22P02")
        #expect(try connection.query("SELECT 1").first != nil)
    }
}
