import ArgumentParser
import Foundation
import Job
import Logging
import Postgres
import Reports

/// Report options `run` and `report` share: flags over the environment over the configuration file.
struct ReportFlags: ParsableArguments {
    @Option(help: "Directory for the reports (default: $CLAWBACK_REPORT_DIR, else reports.directory of the configuration).")
    var reportDir: String?

    @Flag(help: "Start the CSVs with a UTF-8 byte order mark, so Excel reads non-ASCII text right.")
    var excel = false

    @Flag(help: "Write no HTML summary, only the CSVs.")
    var noHTML = false

    func options(_ configuration: ClawbackConfiguration) -> ReportOptions {
        ReportOptions(
            directory: reportDir ?? configuration.reports.directory, byteOrderMark: excel || configuration.reports.excelByteOrderMark,
            html: configuration.reports.html && !noHTML)
    }
}

enum ReportWriting {
    /// Writes the report of `scope`. A failure is a `ReportError`, whose exit status the command line applies:
    /// 66 nothing to report, 69 database, 73 a file that cannot be written, 65 a stored value it cannot show.
    static func write(_ scope: ReportScope, options: ReportOptions, on connection: PostgresConnection, logger: Logger) throws(ReportError)
        -> ReportFiles
    {
        let files = try ReportGenerator.write(scope, options: options, on: connection)
        logger.info("report written", metadata: ["report.scope": "\(scope)", "report.files": "\(files.all.joined(separator: " "))"])
        return files
    }
}
