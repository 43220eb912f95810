public import Foundation
public import Storage

/// A store's own part of finance's report, beside the files every report has: its answers to the store's own
/// refund questions, say (a web shop's Stripe disputes). A store's driver hands its parts to every report
/// (`StoreDriver.reportTables`), and the report writes each the same way, naming no store: a CSV of its own
/// (`<report>-<fileSuffix>.csv`), a sheet of the workbook, rows of the summary CSV and a section of the HTML
/// page, all from one read of the window's rows as of the report's time.
public struct StoreReportTable: Sendable {
    /// The CSV's name after the report's (`stripe-disputes`), also the HTML section's id.
    public var fileSuffix: String
    /// The workbook's sheet and the HTML section's heading, and what the heading's note says.
    public var title: String
    public var note: String
    public var columns: [String]
    /// Reads the part for the purchases of `window` as recorded by `asOf`.
    public var read: @Sendable (_ store: ReportStore, _ window: Window) throws(ReportStore.Failure) -> Contents

    /// What the part reads for: the report's window (its label names the summary rows) and as-of time.
    public struct Window: Sendable {
        public var start: Date
        public var end: Date
        public var label: String
        public var asOf: Date

        public init(start: Date, end: Date, label: String, asOf: Date) {
            self.start = start
            self.end = end
            self.label = label
            self.asOf = asOf
        }
    }

    /// One report's part: its CSV rows (each as wide as `columns`), its summary CSV rows (as wide as the
    /// summary's columns) and its HTML (escaped by the part).
    public struct Contents: Sendable {
        public var rows: [[CSVField]]
        public var summaryRows: [[CSVField]]
        public var html: String

        public init(rows: [[CSVField]], summaryRows: [[CSVField]], html: String) {
            self.rows = rows
            self.summaryRows = summaryRows
            self.html = html
        }
    }

    public init(
        fileSuffix: String, title: String, note: String, columns: [String],
        read: @escaping @Sendable (_ store: ReportStore, _ window: Window) throws(ReportStore.Failure) -> Contents
    ) {
        self.fileSuffix = fileSuffix
        self.title = title
        self.note = note
        self.columns = columns
        self.read = read
    }
}
