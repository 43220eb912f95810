import Foundation
import Reports
import Storage
import TestSupport
import Testing

/// The report's .xlsx workbook, opened by LibreOffice (Debian's libreoffice-calc-nogui) in an en_US and a
/// de_DE locale and saved back as CSV: every sheet's cells are the CSV report's, numbers as numbers (the
/// locale's decimal comma read back), dates as the report's moments, text as its guarded text.
@Suite("The report's workbook round-trips through LibreOffice", .serialized)
struct WorkbookRoundTripTests {
    static let soffice = ProcessInfo.processInfo.environment["CLAWBACK_SOFFICE"] ?? "/usr/bin/soffice"

    /// Every sheet of `workbook` as LibreOffice saves it in `locale`: sheet name → rows of cells.
    static func libreOffice(_ workbook: String, locale: String) async throws -> [String: [[String]]] {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("clawback-lo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        // Comma, double quote, UTF-8, from line 1; cells as shown (the locale's decimal separator); every sheet.
        // Awaited, not waited for: a blocked thread of the test pool would stall every other test meanwhile.
        let result = try await CommandRunner.run(
            executable: URL(fileURLWithPath: soffice),
            [
                "-env:UserInstallation=\(work.appendingPathComponent("profile").absoluteString)", "--headless", "--norestore",
                "--convert-to", "csv:Text - txt - csv (StarCalc):44,34,76,1,,0,false,true,true,false,false,-1", "--outdir",
                work.appendingPathComponent("out").path, workbook,
            ], environment: ["LC_ALL": locale, "LANG": locale, "LANGUAGE": ""], discardingOutput: true)
        #expect(result.status == 0 && !result.killedBySignal, "soffice exited \(result.status)")
        var sheets: [String: [[String]]] = [:]
        let base = URL(fileURLWithPath: workbook).deletingPathExtension().lastPathComponent
        for name in try FileManager.default.contentsOfDirectory(atPath: work.appendingPathComponent("out").path) {
            let sheet = String(name.dropFirst(base.count + 1).dropLast(4))
            // LibreOffice ends its lines with LF; RFC 4180 (and StrictCSV) with CRLF.
            var bytes: [UInt8] = []
            for byte in try Data(contentsOf: work.appendingPathComponent("out").appendingPathComponent(name)) {
                if byte == 0x0A, bytes.last != 0x0D { bytes.append(0x0D) }
                bytes.append(byte)
            }
            let csv = try StrictCSV(bytes)
            sheets[sheet] = [csv.header] + csv.rows.map { row in csv.header.map { row[$0] ?? "" } }
        }
        return sheets
    }

    /// The CSV report's rows, header first.
    static func csv(_ path: String) throws -> [[String]] {
        let csv = try StrictCSV(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
        return [csv.header] + csv.rows.map { row in csv.header.map { row[$0] ?? "" } }
    }

    /// The seconds since 1970 of a report timestamp, or of LibreOffice's `YYYY-MM-DD HH:MM:SS`.
    static func moment(_ text: String) -> Double? {
        // A German LibreOffice writes the seconds' fraction after a comma.
        let digits = text.replacingOccurrences(of: ",", with: ".").split { !$0.isNumber && $0 != "." }.map(String.init)
        guard digits.count >= 6, let year = Int(digits[0]), let month = Int(digits[1]), let day = Int(digits[2]), let hour = Int(digits[3]),
            let minute = Int(digits[4]), let second = Double(digits[5])
        else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day, hour: hour, minute: minute)) else { return nil }
        return date.timeIntervalSince1970 + second
    }

    /// `expected` (the CSV) against `actual` (LibreOffice's), cell by cell: equal text, equal numbers,
    /// moments within the second LibreOffice's format shows.
    static func expectSame(_ expected: [[String]], _ actual: [[String]]?, sheet: String, dates: Set<String>, locale: String) {
        guard let actual else {
            Issue.record("\(locale): LibreOffice saved no sheet \(sheet)")
            return
        }
        #expect(actual.count == expected.count, "\(locale) \(sheet): \(actual.count) rows, the CSV \(expected.count)")
        let header = expected.first ?? []
        for (rowIndex, (want, got)) in zip(expected, actual).enumerated() {
            for (column, name) in header.enumerated() {
                let wanted = column < want.count ? want[column] : ""
                let read = column < got.count ? got[column] : ""
                if wanted == read { continue }
                // The workbook shows a moment to the millisecond, cut (not rounded).
                if rowIndex > 0, dates.contains(name), let a = moment(wanted), let b = moment(read), a - b >= 0, a - b < 0.001 { continue }
                let number = locale.hasPrefix("de") ? read.replacingOccurrences(of: ",", with: ".") : read
                if rowIndex > 0, let a = Decimal(string: wanted, locale: Locale(identifier: "en_US_POSIX")),
                    let b = Decimal(string: number, locale: Locale(identifier: "en_US_POSIX")), a == b,
                    wanted.allSatisfy({ $0.isNumber || $0 == "." || $0 == "-" })
                {
                    continue
                }
                Issue.record(
                    "\(locale) \(sheet) row \(rowIndex) \(name): the CSV has \(wanted.debugDescription), LibreOffice \(read.debugDescription)")
            }
        }
    }

    /// The CSVs' columns that hold moments (`CSVField.moment`), which the workbook writes as dates.
    static let detailDates: Set<String> = ["revocation_date", "purchase_date", "entry_created", "acknowledged_at"]
    static let requestDates: Set<String> = ["requested_at", "deadline", "answered_at", "decided_at"]

    @Test("every figure of every sheet equals the CSV's, in en_US and de_DE", arguments: ["en_US.UTF-8", "de_DE.UTF-8"])
    func roundTrip(locale: String) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.soffice), "LibreOffice is needed (Debian's libreoffice-calc-nogui)")
        try await ReportFixture.withAsync { fixture in
            let run = try fixture.run(status: "succeeded", grantsInScope: 6)
            try fixture.check(.init(transactionID: "usd-1"), run: run)
            try fixture.check(
                .init(
                    transactionID: "jpy-1", revocationDate: Date(timeIntervalSince1970: 1_791_900_000.123456), priceMilli: 160_000, currency: "JPY"),
                run: run)
            try fixture.check(
                .init(
                    transactionID: "bhd-1", revocationType: "REFUND_PRORATED", revocationPercentage: 33_333, priceMilli: 3_770, currency: "BHD",
                    ledgerUnits: 200), run: run)
            try fixture.check(
                .init(
                    transactionID: "=HYPERLINK(\"http://x\")", playerID: "+1-555 <b>&amp;</b>", verdict: "unknown_to_apple",
                    action: "flagged_for_review", detail: "-2 units; 'quoted', \"double\"", ledgerUnits: nil), run: run)
            try fixture.check(.init(transactionID: "ok-1", verdict: "ok", action: "none", revocationDate: nil, ledgerUnits: nil), run: run)
            // Text Excel would read as an escape, and a moment a rounding would carry into the next month.
            try fixture.check(
                .init(
                    transactionID: "esc_x0041_-1", playerID: "p_x00e9_", revocationDate: Date(timeIntervalSince1970: 1_793_491_199.9997),
                    detail: "a\ttab"), run: run)
            let files = try ReportGenerator.write(
                .run(run), options: .init(directory: fixture.directory.path, html: false, xlsx: true), from: ReportStore(fixture.connection.storage))
            let workbook = try #require(files.xlsx)
            #expect(files.all.contains(workbook))
            let sheets = try await Self.libreOffice(workbook, locale: locale)
            let summary = try Self.csv(files.summary)
            Self.expectSame(try Self.csv(files.detail), sheets["detail"], sheet: "detail", dates: Self.detailDates, locale: locale)
            Self.expectSame(summary, sheets["summary"], sheet: "summary", dates: [], locale: locale)
            Self.expectSame(
                [summary[0]] + summary.dropFirst().filter { $0.count > 1 && $0[1] == "recovery" }, sheets["recovery"], sheet: "recovery",
                dates: [], locale: locale)
            Self.expectSame(
                try Self.csv(files.refundRequests), sheets["refund requests"], sheet: "refund requests", dates: Self.requestDates,
                locale: locale)
            // Moments are dates (LibreOffice shows them in the workbook's date format, not as the CSV's text).
            let detail = try #require(sheets["detail"])
            let purchased = try #require(detail.first?.firstIndex(of: "purchase_date"))
            #expect(
                detail.dropFirst().allSatisfy { $0[purchased].count == 23 && $0[purchased].contains(" ") },
                "\(detail.dropFirst().map { $0[purchased] })")
            // 2026-10-31T23:59:59.9997Z stays in October.
            let revoked = try #require(detail.first?.firstIndex(of: "revocation_date"))
            #expect(
                detail.contains { $0[revoked].replacingOccurrences(of: ",", with: ".") == "2026-10-31 23:59:59.999" },
                "\(detail.map { $0[revoked] })")
            // In German, a figure reads with a decimal comma: LibreOffice took it as a number, not as text.
            if locale.hasPrefix("de") {
                #expect(sheets["detail"]?.contains { $0.contains("9,99") } == true)
            }
        }
    }
}
