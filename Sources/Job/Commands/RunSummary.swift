import Foundation
import Reconciliation
import Reports
import Storage

/// The end-of-run summary on stdout.
public enum RunSummary {
    /// The table for a person; JSON when asked; one JSON line when the logs are JSON, so that a log collecting
    /// stdout and stderr together (the journal, a cron log file) holds nothing but JSON lines.
    public static func render(_ outcome: MonthlyRun.Outcome, dryRun: Bool, json: Bool, oneLine: Bool) -> String {
        json || oneLine
            ? Self.json(outcome.run, selection: outcome.selection, dryRun: dryRun, reports: outcome.reports, oneLine: oneLine)
            : table(outcome.run, selection: outcome.selection, dryRun: dryRun, reports: outcome.reports)
    }

    static func table(_ outcome: CheckingOutcome, selection: GrantSelection, dryRun: Bool, reports: ReportFiles?) -> String {
        let counters = outcome.counters
        var rows: [(String, String)] = [
            (
                "run",
                "\(outcome.runID)\(outcome.committedEarlier ? " (committed by an earlier invocation; finished now)" : outcome.resumed ? " (resumed, attempt \(outcome.attempt))" : "")\(dryRun ? " DRY RUN: no ledger entries written" : "")"
            ),
            ("status", outcome.status.rawValue),
            ("window", selection.window.label + (selection.shardCount > 1 ? ", shard \(selection.shardIndex)/\(selection.shardCount)" : "")),
            ("grants in scope", String(counters.grantsInScope)),
            ("checked by this attempt", String(counters.checked)),
        ]
        rows += Verdict.allCases.filter { $0.applies(to: selection.store) }.map { ("  \($0.rawValue)", String(counters.verdicts[$0] ?? 0)) }
        rows += [
            ("ledger entries created", String(counters.newLedgerEntries)),
            ("units clawed back", String(counters.unitsClawedBack)),
            ("units given back", String(counters.unitsReturned)),
            (
                "\(selection.store.company) requests",
                "\(counters.storeRequests) (rate-limited: \(counters.storeRateLimited), retries: \(counters.storeRetries))"
            ),
        ]
        // The voids add a chargeback's or fraud's reason and a quantity refund's exact units: say where they are missing.
        rows += counters.voidsNotCovered.map { ("voids not covering", $0) }
        if counters.auditedGrants > 0 || counters.missedNotifications > 0 {
            rows.append(("audited / missed by feed", "\(counters.auditedGrants) / \(counters.missedNotifications)"))
        }
        rows += [
            ("duration", String(format: "%.1f s", counters.durationSeconds))
        ]
        if let reports { rows += reports.all.map { ("report", $0) } }
        if outcome.status == .incomplete { rows.append(("next", "rerun the same command to retry the \(counters.unverified) unverified grants")) }
        if outcome.status == .interrupted { rows.append(("next", "rerun the same command to resume run \(outcome.runID)")) }
        return TextTable.render(rows.map { [$0.0, $0.1] })
    }

    static func json(_ outcome: CheckingOutcome, selection: GrantSelection, dryRun: Bool, reports: ReportFiles?, oneLine: Bool) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let counters = (try? encoder.encode(outcome.counters)).flatMap { try? JSONSerialization.jsonObject(with: $0) } ?? [:]
        let object: [String: Any] = [
            "run_id": outcome.runID, "status": outcome.status.rawValue, "resumed": outcome.resumed, "attempt": outcome.attempt,
            "committed_earlier": outcome.committedEarlier,
            "window": selection.window.label, "shard": "\(selection.shardIndex)/\(selection.shardCount)", "dry_run": dryRun,
            "counters": counters, "reports": reports?.all ?? [],
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: oneLine ? [.sortedKeys] : [.sortedKeys, .prettyPrinted])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
