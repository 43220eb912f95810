import CrashPoints
public import Foundation
import Reconciliation
public import Storage

/// How and where reports are written.
public struct ReportOptions: Sendable, Equatable {
    public var directory: String
    /// Start the CSVs with a UTF-8 byte order mark, which Excel needs to read them as UTF-8.
    public var byteOrderMark: Bool
    public var html: Bool
    /// Print the HTML summary to PDF too (the month-end pack; needs headless Chromium).
    public var pdf: Bool
    /// Write the report as an .xlsx workbook too: typed cells in any locale.
    public var xlsx: Bool
    /// Read the game's acknowledgements as recorded at this time (a month's close, or to regenerate a report
    /// byte for byte); nil: now, by the database's clock.
    public var asOf: Date?

    public init(directory: String, byteOrderMark: Bool = false, html: Bool = true, pdf: Bool = false, xlsx: Bool = false, asOf: Date? = nil) {
        self.directory = directory
        self.byteOrderMark = byteOrderMark
        self.html = html || pdf
        self.pdf = pdf
        self.xlsx = xlsx
        self.asOf = asOf
    }
}

/// The files one report produced.
public struct ReportFiles: Sendable, Equatable {
    public var detail: String
    public var summary: String
    /// One row per refund request about a purchase of the window (docs/refund-requests.md).
    public var refundRequests: String
    /// One row per Google Play chargeback review about a purchase of the window (docs/google-play.md).
    public var chargebackReviews: String
    /// The stores' own parts (`StoreReportTable`), a CSV each.
    public var storeTables: [String] = []
    public var html: String?
    /// The HTML summary printed to PDF, when asked for.
    public var pdf: String?
    /// The workbook, when asked for.
    public var xlsx: String?
    /// Why the PDF asked for could not be printed (everything else is written).
    public var pdfFailure: String?
    public var flaggedPurchases: Int
    public var runIDs: [Int64]
    /// When the game's acknowledgements were read.
    public var asOf: Date

    public var all: [String] { [detail, summary, refundRequests, chargebackReviews] + storeTables + [html, pdf, xlsx].compactMap { $0 } }
}

/// Writes a report's files from the database: the detail CSV streamed row by row, then the summary CSV and
/// the HTML page from the totals gathered on the way. All files are written to temporary names first and
/// renamed only once every one of them is complete.
public enum ReportGenerator {
    /// `tables`: the stores' own parts, each written beside the shared files (`StoreReportTable`).
    public static func write(
        _ scope: ReportScope, options: ReportOptions, tables: [StoreReportTable] = [], from store: ReportStore
    ) throws(ReportError) -> ReportFiles {
        _ = try read { () throws(ReportStore.Failure) in try store.refreshStaleStatistics() }
        let runs = try read { () throws(ReportStore.Failure) in try store.runs(scope) }
        guard let first = runs.first else {
            switch scope {
            case .run(let id): throw ReportError.noRuns("there is no run \(id)")
            case .window(let window): throw ReportError.noRuns("no run (other than dry runs) covers exactly the window \(window.label)")
            }
        }
        let window = (try? ReconciliationWindow(start: first.windowStart, end: first.windowEnd))?.label ?? "window"
        let runIDs = runs.map(\.runID)
        let base = options.directory + "/" + fileBase(window: window, runIDs: runIDs)
        let detailPath = base + "-detail.csv"
        let summaryPath = base + "-summary.csv"
        let requestsPath = base + "-refund-requests.csv"
        let reviewsPath = base + "-chargeback-reviews.csv"
        let htmlPath = options.html ? base + "-summary.html" : nil

        let detailFile = try file { () throws(FileWriteError) in try AtomicFile(path: detailPath) }
        var detail = CSVWriter(byteOrderMark: options.byteOrderMark)
        detail.appendHeader(DetailReport.columns)
        let asOf: Date
        if let chosen = options.asOf { asOf = chosen } else { asOf = try read { () throws(ReportStore.Failure) in try store.databaseNow() } }
        var totals = ReportTotals(asOf: asOf)
        var flagged = 0
        var workbook: ReportWorkbook?
        var detailSheet: WorksheetWriter?
        if options.xlsx {
            let created = try workbookFile { try ReportWorkbook() }
            detailSheet = try workbookFile { try created.sheet("detail", columns: DetailReport.columns) }
            workbook = created
        }
        try streamed {
            try store.flagged(runIDs, asOf: asOf) { purchase in
                let row = DetailReport.row(purchase, window: window, asOf: asOf)
                detail.appendRow(row)
                detailSheet?.append(row)
                try totals.add(purchase)
                flagged += 1
                if detail.bytes.count >= 1 << 16 {
                    try flush(&detail, to: detailFile)
                    try workbookFile { try detailSheet?.flush() }
                }
            }
        }
        try flush(&detail, to: detailFile)
        try streamed { try store.movements(runIDs) { movement in try totals.add(movement) } }

        let requests = try read { () throws(ReportStore.Failure) in
            try store.refundRequests(from: first.windowStart, to: first.windowEnd, asOf: asOf)
        }
        let requestsFile = try table(
            requests, columns: RefundRequestReport.columns, row: RefundRequestReport.row, path: requestsPath, byteOrderMark: options.byteOrderMark)
        let reviews = try read { () throws(ReportStore.Failure) in
            try store.chargebackReviews(from: first.windowStart, to: first.windowEnd, asOf: asOf)
        }
        let reviewsFile = try table(
            reviews, columns: ChargebackReviewReport.columns, row: ChargebackReviewReport.row, path: reviewsPath,
            byteOrderMark: options.byteOrderMark)

        let span = StoreReportTable.Window(start: first.windowStart, end: first.windowEnd, label: window, asOf: asOf)
        var parts: [(table: StoreReportTable, contents: StoreReportTable.Contents, file: AtomicFile, path: String)] = []
        for table in tables {
            let contents = try read { () throws(ReportStore.Failure) in try table.read(store, span) }
            let path = base + "-" + table.fileSuffix + ".csv"
            let file = try self.table(contents.rows, columns: table.columns, row: { $0 }, path: path, byteOrderMark: options.byteOrderMark)
            parts.append((table, contents, file, path))
        }

        var input = SummaryReport.Input(
            window: window, runs: runs, verdictCounts: try read { () throws(ReportStore.Failure) in try store.verdictCounts(runIDs) },
            ledgerEntries: try read { () throws(ReportStore.Failure) in try store.ledgerEntryCount(runIDs) }, totals: totals,
            refundRequests: requests, speed: try read { () throws(ReportStore.Failure) in try store.recoverySpeed(runIDs, asOf: asOf) },
            chargebackReviews: reviews)
        input.storeParts = parts.map { SummaryReport.StorePart(title: $0.table.title, note: $0.table.note, contents: $0.contents) }
        let summaryFile = try file { () throws(FileWriteError) in try AtomicFile(path: summaryPath) }
        var summary = CSVWriter(byteOrderMark: options.byteOrderMark)
        summary.appendHeader(SummaryReport.columns)
        for row in SummaryReport.rows(input) { summary.appendRow(row) }
        try flush(&summary, to: summaryFile)
        var xlsxFile: AtomicFile?
        if let workbook {
            let summaryRows = SummaryReport.rows(input)
            xlsxFile = try workbookFile {
                let summarySheet = try workbook.sheet("summary", columns: SummaryReport.columns)
                let recoverySheet = try workbook.sheet("recovery", columns: SummaryReport.columns)
                for row in summaryRows {
                    summarySheet.append(row)
                    if row.count > 1, row[1] == .text("recovery") { recoverySheet.append(row) }
                }
                let requestsSheet = try workbook.sheet("refund requests", columns: RefundRequestReport.columns)
                for line in requests { requestsSheet.append(RefundRequestReport.row(line)) }
                let reviewsSheet = try workbook.sheet("chargeback reviews", columns: ChargebackReviewReport.columns)
                for line in reviews { reviewsSheet.append(ChargebackReviewReport.row(line)) }
                for part in parts {
                    let sheet = try workbook.sheet(part.table.title, columns: part.table.columns)
                    for row in part.contents.rows { sheet.append(row) }
                }
                let file = try AtomicFile(path: base + ".xlsx")
                try workbook.write(to: file)
                return file
            }
        }
        var htmlFile: AtomicFile?
        if let path = htmlPath {
            let page = Array(HTMLSummary.page(input, detailFileName: fileName(detailPath)).utf8)
            htmlFile = try file { () throws(FileWriteError) in
                let html = try AtomicFile(path: path)
                try html.write(page)
                return html
            }
        }

        CrashPoint.reached("reports.before-rename")
        try file { () throws(FileWriteError) in
            try detailFile.commit()
            CrashPoint.reached("reports.between-renames")
            try summaryFile.commit()
            try requestsFile.commit()
            try reviewsFile.commit()
            for part in parts { try part.file.commit() }
            try htmlFile?.commit()
            try xlsxFile?.commit()
        }
        CrashPoint.reached("reports.after-rename")
        // The PDF comes last, from the page just committed; a PDF of an earlier report of these runs goes first,
        // so that no pack disagrees with the CSVs beside it. Its failure is the caller's to report once the
        // rest of its work is done: the CSVs, the page and the workbook are written.
        var pdfPath: String?
        var pdfFailure: String?
        if options.pdf, let htmlPath {
            try? FileManager.default.removeItem(atPath: base + "-summary.pdf")
            do {
                try PDFPrinter.print(htmlAt: htmlPath, to: base + "-summary.pdf")
                pdfPath = base + "-summary.pdf"
            } catch {
                pdfFailure = "\(error)"
            }
        }
        return ReportFiles(
            detail: detailPath, summary: summaryPath, refundRequests: requestsPath, chargebackReviews: reviewsPath, storeTables: parts.map(\.path),
            html: htmlPath, pdf: pdfPath, xlsx: xlsxFile == nil ? nil : base + ".xlsx", pdfFailure: pdfFailure, flaggedPurchases: flagged,
            runIDs: runIDs, asOf: asOf)
    }

    /// `clawback-2026-08-01..2026-11-01-run-42`, or `...-runs-41-48` for a merged window.
    static func fileBase(window: String, runIDs: [Int64]) -> String {
        let safeWindow = window.replacingColons()
        let runs = runIDs.count == 1 ? "run-\(runIDs[0])" : "runs-\(runIDs.first ?? 0)-\(runIDs.last ?? 0)"
        return "clawback-\(safeWindow)-\(runs)"
    }

    public static func fileName(_ path: String) -> String {
        String(path.split(separator: "/").last ?? Substring(path))
    }

    /// `lines` as a CSV file of their own, written whole to its temporary name (renamed with the others).
    private static func table<Line>(
        _ lines: [Line], columns: [String], row: (Line) -> [CSVField], path: String, byteOrderMark: Bool
    ) throws(ReportError) -> AtomicFile {
        let table = try file { () throws(FileWriteError) in try AtomicFile(path: path) }
        var rows = CSVWriter(byteOrderMark: byteOrderMark)
        rows.appendHeader(columns)
        for line in lines { rows.appendRow(row(line)) }
        try flush(&rows, to: table)
        return table
    }

    private static func flush(_ writer: inout CSVWriter, to atomicFile: AtomicFile) throws(ReportError) {
        try file { () throws(FileWriteError) in try writer.drain { bytes throws(FileWriteError) in try atomicFile.write(bytes) } }
    }

    /// A stream of the report's rows into its files and totals: the report's own errors as they are, the
    /// store's as a read failure, anything else as data the report cannot show.
    private static func streamed(_ body: () throws -> Void) throws(ReportError) {
        do {
            try body()
        } catch let error as ReportError {
            throw error
        } catch let error as ReportStore.Failure {
            throw .read(error)
        } catch {
            throw .badData("\(error)")
        }
    }

    /// A read of the report's data, its failure reported as the report's.
    private static func read<T>(_ body: () throws(ReportStore.Failure) -> T) throws(ReportError) -> T {
        do {
            return try body()
        } catch {
            throw .read(error)
        }
    }

    /// The workbook's work, its failure (a temporary file, the ZIP container) reported as the report's.
    private static func workbookFile<T>(_ body: () throws -> T) throws(ReportError) -> T {
        do {
            return try body()
        } catch let error as FileWriteError {
            throw .cannotWrite(error)
        } catch {
            throw .cannotWrite(FileWriteError(path: "the .xlsx workbook", reason: "\(error)"))
        }
    }

    /// File work, its failure reported as the report's.
    private static func file<T>(_ body: () throws(FileWriteError) -> T) throws(ReportError) -> T {
        do {
            return try body()
        } catch {
            throw .cannotWrite(error)
        }
    }
}

extension String {
    /// Windows with a time of day have colons, which some file systems and tools refuse in names.
    fileprivate func replacingColons() -> String {
        String(map { $0 == ":" ? "-" : $0 })
    }
}
