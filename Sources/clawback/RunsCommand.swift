import ArgumentParser
import Foundation
import Postgres
import Storage

struct RunsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "runs", abstract: "List recent runs with their status and counters.", usage: "clawback runs [<options>]")

    @OptionGroup var configOptions: ConfigOptions
    @OptionGroup var database: DatabaseOptions
    @OptionGroup var logging: LoggingOptions
    @Option(help: "How many runs.") var limit = 20

    func run() async throws {
        let logger = logging.makeLogger(label: "clawback.runs")
        let configuration = try configOptions.load(logger: logger)
        let connection = try database.connect(logger: logger, configuration.database)
        let runs: [RunRecord]
        do { runs = try RunStore.recent(limit: limit, on: connection) } catch {
            logger.error("cannot read runs", metadata: ["error": "\(error)"])
            throw ExitCodes.unavailable
        }
        var lines = [["run", "status", "started (UTC)", "window", "shard", "strategy", "attempts", "checked", "unverified", "by"]]
        for run in runs {
            // Unreadable stored figures show as none; the checks themselves are intact.
            let verdicts = (try? RunCounters.decode(json: run.counters))?.verdicts ?? [:]
            // Committed, but the invocation died before its reports: the next `clawback run` writes them.
            let pending = run.status == .succeeded && run.finalizedAt == nil ? ", reports pending" : ""
            lines.append([
                String(run.runID) + (run.dryRun ? " (dry)" : ""),
                run.status.rawValue + pending,
                String(PostgresTimestamp.format(run.startedAt).prefix(19)),
                String(PostgresTimestamp.format(run.windowStart).prefix(10)) + ".." + String(PostgresTimestamp.format(run.windowEnd).prefix(10)),
                "\(run.shardIndex)/\(run.shardCount)", run.strategy, String(run.attempts), String(verdicts.values.reduce(0, +)),
                String(verdicts[.unverified] ?? 0), "\(run.triggeredBy)@\(run.host)",
            ])
        }
        print(TextTable.render(lines))
    }
}
