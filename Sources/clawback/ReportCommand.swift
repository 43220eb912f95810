import ArgumentParser
import Foundation
import Job
import Reconciliation

struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Regenerate finance's reports from the database: detail CSV, summary CSV and HTML summary.",
        usage: "clawback report [--run <run>] [<options>]",
        discussion: """
            --run RUN: that run's report, as the run wrote it, with the game's acknowledgements as they stand now \
            (--as-of the time in the run's summary, `ledger_as_of`, gives back the run's files byte for byte). A window (--month, --from/--to, or by \
            default the three months before this one, like `clawback run`): every run of exactly that window merged \
            (shards, per-bundle runs and reruns; each purchase from the latest run that checked it; dry runs left out).

            Exit status: 0 written; 64 usage (--as-of in the future); 65 stored data that cannot be reported; 66 no run \
            to report on; 69 database unreachable; 73 the report directory cannot be written; 78 configuration, or the \
            database not migrated (run `clawback migrate`) or migrated by a newer clawback.
            """)

    @OptionGroup var options: CommandOptions
    @OptionGroup var reportFlags: ReportFlags

    @Option(name: .customLong("run"), help: "This run's report.") var runID: Int64?
    @Option(help: "The window of one calendar month, YYYY-MM.") var month: String?
    @Option(help: "Window start (YYYY-MM-DD or RFC 3339), with --to.") var from: String?
    @Option(help: "Window end, exclusive.") var to: String?
    @Option(help: "Read the game's acknowledgements as recorded at this time (YYYY-MM-DD or RFC 3339; default: now).")
    var asOf: String?

    func validate() throws {
        let windows = [month != nil, from != nil || to != nil].filter { $0 }.count
        if runID != nil && windows > 0 { throw ValidationError("give --run or a window (--month, --from/--to), not both") }
        if windows > 1 { throw ValidationError("give --month or --from/--to, not both") }
        if (from == nil) != (to == nil) { throw ValidationError("--from and --to go together") }
        // A time to come would age pending entries against a moment that has not happened.
        if let asOf = try asOfDate(), asOf > Date().addingTimeInterval(60) {
            throw ValidationError("--as-of \(self.asOf ?? "") is in the future")
        }
    }

    func asOfDate() throws -> Date? {
        guard let asOf else { return nil }
        do {
            return try ReportWriting.instant(asOf)
        } catch {
            throw ValidationError("--as-of: \(error.description)")
        }
    }

    func window(now: Date, windowMonths: Int) throws -> ReconciliationWindow {
        do {
            if let month { return try ReconciliationWindow.month(month) }
            if let from, let to {
                return try ReconciliationWindow(start: try ReconciliationWindow.date(from), end: try ReconciliationWindow.date(to))
            }
        } catch {
            throw ValidationError(error.description)
        }
        return ReconciliationWindow.monthsBefore(now, months: windowMonths)
    }

    func run() async throws {
        let context = try options.context(label: "clawback.report")
        let window = try window(now: Date(), windowMonths: context.configuration.run.windowMonths)
        let request = ReportWriting.Request(runID: runID, window: window, choices: reportFlags.choices, asOf: try asOfDate())
        try await ReportWriting.run(request, context).emit()
    }
}
