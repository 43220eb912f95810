import ArgumentParser
import Job

struct PruneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prune",
        abstract: "The tail window: drop grant partitions older than retention, create the next ones, prune old records.",
        usage: "clawback prune [<options>] [--dry-run]",
        discussion: """
            A monthly partition is dropped once it lies entirely before now minus tail_window.grant_retention_months, \
            unless a run that has not finished covers it. It is detached first (a short catalog lock on \
            clawback.grants, retried) and then dropped; a prune interrupted between the two is finished by the next. \
            Runs, their checks and acknowledged ledger entries older than tail_window.record_retention_years go too. \
            --dry-run prints the same table and changes nothing.

            Exit status: 0 done; 69 database unreachable; 75 the grants table stayed locked (rerun later); \
            78 configuration; 85 another prune is running.
            """)

    @OptionGroup var options: CommandOptions
    @Flag(help: "Show what would be dropped and deleted; change nothing.") var dryRun = false

    func run() async throws {
        print(try TailWindowPrune.run(dryRun: dryRun, try options.context(label: "clawback.prune")))
    }
}
