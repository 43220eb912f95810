import Reconciliation
import Storage

/// `clawback runs`: the recent runs with their status and counters, as a table.
public enum RunsListing {
    public static func recent(limit: Int, _ context: CommandContext) throws -> String {
        let connection = try context.connect()
        let runs = try RunStore.recent(limit: limit, on: connection)
        var lines = [["run", "status", "started (UTC)", "window", "shard", "strategy", "attempts", "checked", "unverified", "by"]]
        for run in runs {
            // Unreadable stored figures show as none; the checks themselves are intact.
            let verdicts = (try? RunStore.counters(of: run))?.verdicts ?? [:]
            // Committed, but the invocation died before its reports: the next `clawback run` writes them.
            let pending = run.status == .succeeded && run.finalizedAt == nil ? ", reports pending" : ""
            lines.append([
                String(run.runID) + (run.dryRun ? " (dry)" : ""),
                run.status.rawValue + pending,
                String(DatabaseTimestamp.format(run.startedAt).prefix(19)),
                String(DatabaseTimestamp.format(run.windowStart).prefix(10)) + ".." + String(DatabaseTimestamp.format(run.windowEnd).prefix(10)),
                "\(run.shardIndex)/\(run.shardCount)", run.strategy.rawValue, String(run.attempts), String(verdicts.values.reduce(0, +)),
                String(verdicts[.unverified] ?? 0), "\(run.triggeredBy)@\(run.host)",
            ])
        }
        return TextTable.render(lines)
    }
}
