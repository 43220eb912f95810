public import Foundation
import Logging
public import Reconciliation
public import Reports
import Storage

/// The report flags `run` and `report` share (`--report-dir`, `--excel`, `--no-html`): flags over the
/// environment over the configuration file.
public struct ReportChoices: Sendable {
    public var directory: String?
    public var excel: Bool
    public var noHTML: Bool
    public var pdf: Bool
    public var xlsx: Bool

    public init(directory: String?, excel: Bool, noHTML: Bool, pdf: Bool = false, xlsx: Bool = false) {
        self.directory = directory
        self.excel = excel
        self.noHTML = noHTML
        self.pdf = pdf
        self.xlsx = xlsx
    }

    public func options(_ configuration: ClawbackConfiguration) -> ReportOptions {
        ReportOptions(
            directory: directory ?? configuration.reports.directory, byteOrderMark: excel || configuration.reports.excelByteOrderMark,
            html: configuration.reports.html && !noHTML, pdf: pdf, xlsx: xlsx)
    }
}

/// `clawback report`: finance's reports of one run, or of every run of a window merged, written again from
/// the database and delivered where the configuration says.
public enum ReportWriting {
    public struct Request: Sendable {
        /// One run's report; nil: the window's.
        public var runID: Int64?
        public var window: ReconciliationWindow
        public var choices: ReportChoices
        public var asOf: Date?

        public init(runID: Int64?, window: ReconciliationWindow, choices: ReportChoices, asOf: Date?) {
            self.runID = runID
            self.window = window
            self.choices = choices
            self.asOf = asOf
        }
    }

    /// A moment given on the command line (`--as-of`): the summary's own timestamp with microseconds first
    /// (ISO8601DateFormatter keeps milliseconds at most), else YYYY-MM-DD or RFC 3339.
    public static func instant(_ text: String) throws(WindowError) -> Date {
        if let exact = DatabaseTimestamp.parse(text) { return exact }
        return try ReconciliationWindow.date(text)
    }

    /// What to tell the operator, line by line: the scope, each file, where they were delivered; a delivery
    /// that failed (73) ends the output, so the files written are still listed.
    public static func run(_ request: Request, _ context: CommandContext) async throws -> CommandOutput {
        let scope: ReportScope = request.runID.map(ReportScope.run) ?? .window(request.window)
        let connection = try context.connect()
        var options = request.choices.options(context.configuration)
        options.asOf = request.asOf
        let delivery = try ReportDelivery.configured(context.configuration, logger: context.logger)
        let files = try write(scope, options: options, on: connection, context: context)
        var lines = [
            "report of \(scope) (runs \(files.runIDs.map(String.init).joined(separator: ", "))): \(files.flaggedPurchases) flagged purchases"
        ]
        lines += files.all
        if let delivery {
            do {
                try await delivery.deliver(files.all)
            } catch {
                return CommandOutput(lines, failure: error)
            }
            lines.append("delivered to \(delivery.destination)")
        }
        if let failure = files.pdfFailure { return CommandOutput(lines, failure: ReportError.pdf(failure)) }
        return CommandOutput(lines)
    }

    /// Writes the report of `scope`. A failure is a `ReportError`, whose exit status the command line applies:
    /// 66 nothing to report, 69 database, 73 a file that cannot be written, 65 a stored value it cannot show.
    static func write(_ scope: ReportScope, options: ReportOptions, on connection: DatabaseConnection, context: CommandContext)
        throws(ReportError) -> ReportFiles
    {
        let files = try ReportGenerator.write(
            scope, options: options, tables: StoreDrivers.reportTables(context.configuration), from: ReportStore(connection))
        context.logger.info("report written", metadata: ["report.scope": "\(scope)", "report.files": "\(files.all.joined(separator: " "))"])
        return files
    }
}
