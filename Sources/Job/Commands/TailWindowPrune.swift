import Foundation
import Storage

/// `clawback prune`: the tail window's prune on its own (the monthly run also prunes after it finishes),
/// returned as the table the operator reads. `GrantPruner.PruneError` carries the exit status: 85 another
/// prune, 75 the grants table stayed locked, 69 the database.
public enum TailWindowPrune {
    public static func run(dryRun: Bool, _ context: CommandContext) throws -> String {
        let connection = try context.connect()
        let outcome = try Pruning.prune(context.configuration, dryRun: dryRun, on: connection, logger: context.logger)
        return PruneTable.render(outcome, configuration: context.configuration)
    }
}

/// What a prune did (or, in a dry run, would do), as a table.
enum PruneTable {
    static func render(_ outcome: GrantPruner.Outcome, configuration: ClawbackConfiguration) -> String {
        let retention = configuration.tailWindow.grantRetention(windowMonths: configuration.run.windowMonths)
        var lines = [
            (outcome.dryRun ? "DRY RUN: nothing changed. " : "")
                + "Grants kept \(retention) months: partitions ending by \(DatabaseTimestamp.format(outcome.grantCutoff).prefix(19))Z go."
        ]
        if outcome.partitionsCreated > 0 { lines.append("created \(outcome.partitionsCreated) partition(s) ahead") }
        var rows = [["partition", "purchases", "state", "rows", "size", "action"]]
        for entry in outcome.partitions {
            let partition = entry.partition
            rows.append([
                partition.name, month(partition.start) + ".." + month(partition.end), partition.state.rawValue,
                entry.rows.map(String.init) ?? "", size(partition.bytes), describe(entry.action, dryRun: outcome.dryRun),
            ])
        }
        lines.append(TextTable.render(rows))
        let dropped = outcome.dropped
        lines.append(
            "\(outcome.dryRun ? "would drop" : "dropped") \(dropped.count) partition(s): \(dropped.reduce(0) { $0 + ($1.rows ?? 0) }) grants, "
                + size(dropped.reduce(0) { $0 + $1.partition.bytes }))
        let records =
            ["\(outcome.ledgerEntries) acknowledged ledger entries", "\(outcome.runs) runs with \(outcome.checks) checks"]
            + outcome.storeRecords.map { "\($0.rows) \($0.label)" }
        lines.append(
            "records older than \(configuration.tailWindow.recordRetentionYears) years (before \(DatabaseTimestamp.format(outcome.recordCutoff).prefix(10))): "
                + records.joined(separator: ", ") + (outcome.dryRun ? " would be deleted" : " deleted"))
        lines.append(
            "default partition: \(outcome.defaultPartitionRows) rows"
                + (outcome.defaultPartitionRows > 0
                    ? " (WARNING: grants outside every monthly partition; see docs/operations.md, the runbook)" : ""))
        return lines.joined(separator: "\n")
    }

    static func describe(_ action: GrantPruner.Action, dryRun: Bool) -> String {
        switch action {
        case .drop: dryRun ? "would drop" : "dropped"
        case .finishDrop: dryRun ? "would drop (left detached by an interrupted prune)" : "dropped (left detached by an interrupted prune)"
        case .keepWithinRetention: "kept"
        case .keepForRuns(let runs): "kept: unfinished run " + runs.map(String.init).joined(separator: ", ") + " covers it"
        case .keepDetachedWithinRetention: "kept: detached by someone else, within retention"
        }
    }

    static func month(_ date: Date) -> String { String(DatabaseTimestamp.format(date).prefix(7)) }

    static func size(_ bytes: Int64) -> String {
        if bytes < 1024 { return "\(bytes) B" }
        let units = ["kB", "MB", "GB", "TB"]
        var value = Double(bytes) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }
}
