import ArgumentParser
import Job

/// Report options `run` and `report` share: flags over the environment over the configuration file.
struct ReportFlags: ParsableArguments {
    @Option(help: "Directory for the reports (default: $CLAWBACK_REPORT_DIR, else reports.directory of the configuration).")
    var reportDir: String?

    @Flag(help: "Start the CSVs with a UTF-8 byte order mark, so Excel reads non-ASCII text right.")
    var excel = false

    @Flag(help: "Write no HTML summary, only the CSVs.")
    var noHTML = false

    @Flag(help: "Also print the HTML summary to PDF (the month-end pack), with headless Chromium ($CLAWBACK_CHROMIUM, else /usr/bin/chromium).")
    var pdf = false

    @Flag(help: "Also write the report as an .xlsx workbook: typed numbers, dates and currency decimals that open right in any locale.")
    var xlsx = false

    var choices: ReportChoices { ReportChoices(directory: reportDir, excel: excel, noHTML: noHTML, pdf: pdf, xlsx: xlsx) }
}
