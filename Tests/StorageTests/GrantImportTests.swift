import Foundation
import Postgres
import TestSupport
import Testing

@testable import Storage

@Suite("Importing grants")
struct GrantImportTests {
    func withMigratedDatabase(_ body: (PostgresConnection) throws -> Void) throws {
        try TestPostgres.withScratchDatabase { database in
            let connection = try TestPostgres.connect(database: database)
            try Migrator().migrate(on: connection.storage)
            try body(connection)
        }
    }

    func count(_ connection: PostgresConnection) throws -> Int {
        try connection.query("SELECT count(*) FROM clawback.grants").first?.decode(Int.self, at: 0) ?? -1
    }

    @Test("100,000 JSONL lines load with COPY into their months' partitions; importing the file again adds nothing")
    func largeAndIdempotent() throws {
        try withMigratedDatabase { connection in
            var text = ""
            text.reserveCapacity(100_000 * 200)
            for index in 0..<100_000 {
                let day = 1 + index % 28
                let month = 1 + (index / 28) % 12
                text += """
                    {"transaction_id":"\(2_000_000_000_000 + index)","bundle_id":"com.studio.game","product_id":"gems_\(index % 5)",\
                    "player_id":"player-\(index % 997)","units_granted":\(100 * (1 + index % 5)),"price_milli":990,"currency":"USD",\
                    "purchased_at":"2025-\(month < 10 ? "0" : "")\(month)-\(day < 10 ? "0" : "")\(day)T12:00:00Z"}

                    """
            }
            let data = Data(text.utf8)
            let first = try GrantImport.importData(data, format: .jsonl, skipInvalid: false, on: connection.storage)
            #expect(first.invalid.isEmpty)
            #expect(first.valid == 100_000 && first.inserted == 100_000)
            #expect(try count(connection) == 100_000)
            #expect(try GrantPartitions.defaultPartitionRows(on: connection.storage) == 0)
            let again = try GrantImport.importData(data, format: .jsonl, skipInvalid: false, on: connection.storage)
            #expect(again.inserted == 0 && again.alreadyPresent == 100_000)
            #expect(try count(connection) == 100_000)
        }
    }

    @Test("CSV: header row, quoted commas, quotes and line breaks, CRLF and a byte order mark; values arrive exactly")
    func csv() throws {
        try withMigratedDatabase { connection in
            let csv =
                "\u{FEFF}transaction_id,bundle_id,product_id,player_id,units_granted,purchased_at,quantity,price_milli,currency,environment\r\n"
                + "t1,com.studio.game,gems_600,\"player, with \"\"quotes\"\"\nand a line break\",600,2026-10-03T14:21:07Z,2,1980,EUR,Sandbox\r\n"
                + "t2,com.studio.game,gems_100,joueur-é,100,2026-10-04T00:00:00+02:00,,,,\r\n"
            let outcome = try GrantImport.importData(Data(csv.utf8), format: .csv, skipInvalid: false, on: connection.storage)
            #expect(outcome.invalid.isEmpty, "\(outcome.invalid)")
            #expect(outcome.inserted == 2)
            let rows = try connection.query(
                """
                SELECT transaction_id, player_id, quantity, price_milli, currency, environment, purchased_at, original_transaction_id
                FROM clawback.grants ORDER BY transaction_id
                """
            ).rows
            #expect(try rows[0].decode(String.self, at: 1) == "player, with \"quotes\"\nand a line break")
            #expect(try rows[0].decode(Int.self, at: 2) == 2)
            #expect(try rows[0].decode(Int64?.self, at: 3) == 1980)
            #expect(try rows[0].decode(String.self, at: 5) == "Sandbox")
            #expect(try rows[0].decode(String.self, at: 7) == "t1")
            #expect(try rows[1].decode(String.self, at: 1) == "joueur-é")
            #expect(try rows[1].decode(Int.self, at: 2) == 1)
            #expect(try rows[1].decode(Int64?.self, at: 3) == nil)
            #expect(try rows[1].decode(String.self, at: 5) == "Production")
            #expect(try rows[1].decode(Date.self, at: 6) == Date(timeIntervalSince1970: 1_791_064_800))  // 2026-10-03T22:00:00Z
        }
    }

    @Test("every bad line is reported with its number and reason, and nothing is loaded unless bad lines are skipped")
    func badLines() throws {
        try withMigratedDatabase { connection in
            var lines = [
                #"{"transaction_id":"ok-1","bundle_id":"b","product_id":"p","player_id":"x","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z"}"#,
                #"{"bundle_id":"b","product_id":"p","player_id":"x","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z"}"#,
                #"{"transaction_id":"t3","bundle_id":"b","product_id":"p","player_id":"x","units_granted":1,"purchased_at":"yesterday"}"#,
                #"{"transaction_id":"t4","bundle_id":"b","product_id":"p","player_id":"x","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z","environment":"Prod"}"#,
                #"{"transaction_id":"t5","bundle_id":"b","product_id":"p","player_id":"x","units_granted":"many","purchased_at":"2026-10-01T00:00:00Z","currency":"usd"}"#,
                #"{"transaction_id":"t6","bundle_id":"b","product_id":"p","player_id":"x","units_granted":-5,"purchased_at":"2026-10-01T00:00:00Z"}"#,
                #"{"transaction_id":2000000000000123456,"bundle_id":"b","product_id":"p","player_id":"x","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z"}"#,
                #"{"transaction_id":"t8","bundle_id":"b","product_id":"p","player_id":"x","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z","colour":"red"}"#,
                "not json at all",
                #"{"transaction_id":"ok-2","bundle_id":"b","product_id":"p","player_id":"'; DROP TABLE clawback.grants; --","units_granted":1,"purchased_at":"2026-10-01T00:00:00Z"}"#,
            ].map { Data($0.utf8) }
            lines.insert(Data([0x7B, 0xFF, 0xFE, 0x7D]), at: 9)  // line 10: not UTF-8
            let data = Data(lines.joined(separator: Data("\n".utf8)))
            let outcome = try GrantImport.importData(data, format: .jsonl, skipInvalid: false, on: connection.storage)
            let reasons = Dictionary(uniqueKeysWithValues: outcome.invalid.map { ($0.line, $0.reason) })
            #expect(reasons.keys.sorted() == [2, 3, 4, 5, 6, 7, 8, 9, 10])
            #expect(reasons[2]?.contains("transaction_id is missing") == true)
            #expect(reasons[3]?.contains("purchased_at is not an RFC 3339 timestamp") == true)
            #expect(reasons[4]?.contains("environment must be Production or Sandbox") == true)
            #expect(reasons[5]?.contains("units_granted must be an integer") == true)
            #expect(reasons[5]?.contains("currency must be an ISO 4217 code") == true)
            #expect(reasons[6]?.contains("units_granted must be at least 0") == true)
            #expect(reasons[7]?.contains("transaction_id must be a string") == true)
            #expect(reasons[8]?.contains("unknown field colour") == true)
            #expect(reasons[9]?.contains("not a JSON object") == true)
            #expect(reasons[10] == "not UTF-8")
            #expect(outcome.inserted == 0)
            #expect(try count(connection) == 0)

            let skipping = try GrantImport.importData(data, format: .jsonl, skipInvalid: true, on: connection.storage)
            #expect(skipping.inserted == 2 && skipping.invalid.count == 9)
            #expect(
                try connection.query("SELECT player_id FROM clawback.grants WHERE transaction_id = 'ok-2'").first?.decode(String.self, at: 0)
                    == "'; DROP TABLE clawback.grants; --")
        }
    }

    @Test("CSV problems: an unknown or missing column refuses the file; a broken record names its line")
    func csvProblems() throws {
        try withMigratedDatabase { connection in
            #expect {
                try GrantImport.importData(
                    Data("transaction_id,bundle_id,product_id,player_id,units_granted,purchased_at,colour\n".utf8),
                    format: .csv, skipInvalid: true, on: connection.storage)
            } throws: { error in
                "\(error)".contains("unknown column(s) colour")
            }
            #expect {
                try GrantImport.importData(Data("transaction_id,bundle_id\nt,b\n".utf8), format: .csv, skipInvalid: true, on: connection.storage)
            } throws: { error in
                "\(error)".contains("missing column(s) product_id, player_id, units_granted, purchased_at")
            }
            let csv = """
                transaction_id,bundle_id,product_id,player_id,units_granted,purchased_at
                a,b,p,"two
                lines",1,2026-10-01T00:00:00Z
                c,b,p,x,1
                d,b,p,"unclosed,1,2026-10-01T00:00:00Z

                """
            let outcome = try GrantImport.importData(Data(csv.utf8), format: .csv, skipInvalid: true, on: connection.storage)
            #expect(outcome.inserted == 1)
            #expect(outcome.invalid.map(\.line) == [4, 5])
            #expect(outcome.invalid.first?.reason == "5 fields where the header has 6")
            #expect(outcome.invalid.last?.reason == "a quoted field is not closed")
        }
    }

    @Test("a file is read in place, a pipe whole: both import what the same bytes in memory import; a missing file says why")
    func fromFileAndPipe() throws {
        let lines = (0..<500).map { index in
            #"{"transaction_id":"\#(3_000_000_000_000 + index)","bundle_id":"com.studio.game","product_id":"gems_600","#
                + #""player_id":"p-\#(index % 7)","units_granted":600,"purchased_at":"2026-10-0\#(1 + index % 9)T10:00:00Z"}"#
        }
        let data = Data((lines.joined(separator: "\n") + "\n").utf8)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-import-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("grants.jsonl")
        try data.write(to: file)
        let fifo = directory.appendingPathComponent("pipe.jsonl").path
        #expect(mkfifo(fifo, 0o600) == 0)
        try withMigratedDatabase { connection in
            let fromFile = try GrantImport.importFile(file.path, format: .jsonl, skipInvalid: false, on: connection.storage)
            #expect(fromFile.inserted == 500 && fromFile.invalid.isEmpty)
            // The same rows again, from memory and from a pipe: nothing new, every line valid.
            let fromMemory = try GrantImport.importData(data, format: .jsonl, skipInvalid: false, on: connection.storage)
            #expect(fromMemory.valid == 500 && fromMemory.alreadyPresent == 500)
            let writer = Thread {
                if let handle = FileHandle(forWritingAtPath: fifo) {
                    handle.write(data)
                    try? handle.close()
                }
            }
            writer.start()
            let fromPipe = try GrantImport.importFile(fifo, format: .jsonl, skipInvalid: false, on: connection.storage)
            #expect(fromPipe.valid == 500 && fromPipe.alreadyPresent == 500)
            #expect(try count(connection) == 500)
            #expect(throws: GrantImport.Unreadable.self) {
                try GrantImport.importFile(
                    directory.appendingPathComponent("missing.jsonl").path, format: .jsonl, skipInvalid: false, on: connection.storage)
            }
        }
    }

    @Test("a mapped file written to after it was mapped is seen changed: the import would not commit what it did not validate")
    func changedFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-changed-\(UUID()).jsonl")
        try Data("{}\n".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let bytes = try GrantFileBytes(path: file.path)
        #expect(bytes.isUnchanged && bytes.buffer.count == 3)
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        handle.write(Data("{}\n".utf8))
        try handle.close()
        #expect(!bytes.isUnchanged)
    }

    @Test("the format comes from the file name")
    func formatFromPath() {
        #expect(GrantImport.Format(path: "grants.jsonl") == .jsonl)
        #expect(GrantImport.Format(path: "/tmp/export.NDJSON") == .jsonl)
        #expect(GrantImport.Format(path: "grants.csv") == .csv)
        #expect(GrantImport.Format(path: "grants.txt") == nil)
    }
}
