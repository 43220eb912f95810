public import Foundation
import Reconciliation
import Reports
public import Storage

/// Prometheus metrics of each job, for node_exporter's textfile collector and a Pushgateway
/// (`MetricsTarget`). The time of the last success is carried over from the previous file when this run did
/// not succeed (at the Pushgateway, from the group's own), so "no success in 35 days" stays
/// computable.
public enum MetricsFile {
    /// Whose series a file holds: each store's driver names its runs' (`StoreDriver.metricsSeries`). Each run
    /// kind's series are named apart: the files sit in one textfile directory, node_exporter refuses a series
    /// twice, and each kind's last success must stay its own.
    public struct Series: Sendable, Equatable {
        /// Every series' name starts with it (`clawback_`, `clawback_google_daily_`).
        public var prefix: String
        /// The ledger series' `source` label.
        public var source: String
        /// The store's API the request series count, for their help text.
        public var api: String
        /// The request series' names after the prefix are the same for every store (`clawback_requests`,
        /// `clawback_google_requests`); a store's series may also keep former names, deprecated (CHANGELOG).
        public var deprecatedRequestNames: FormerNames?

        public struct FormerNames: Sendable, Equatable {
            public var requests: String
            public var rateLimited: String

            public init(requests: String, rateLimited: String) {
                self.requests = requests
                self.rateLimited = rateLimited
            }
        }

        public init(prefix: String, source: String, api: String, deprecatedRequestNames: FormerNames? = nil) {
            self.prefix = prefix
            self.source = source
            self.api = api
            self.deprecatedRequestNames = deprecatedRequestNames
        }
    }

    /// How far back a run's file measures how fast refunds came back (`speed`).
    public static let speedSpan: TimeInterval = 30 * 86_400

    public static func write(
        to target: MetricsTarget, status: RunStatus, counters: RunCounters, runID: Int64, window: String, dryRun: Bool,
        pending: StaffLedger.Pending? = nil, speed: RecoverySpeed? = nil, series: Series, now: Date = Date()
    ) async throws(MetricsTarget.NotDelivered) {
        let prefix = series.prefix
        var lastSuccess = target.previousValue(prefix + "last_success_timestamp_seconds")
        if status == .succeeded && !dryRun { lastSuccess = now.timeIntervalSince1970 }
        let labels = "window=\"\(window)\""
        var lines: [String] = []
        func metric(_ suffix: String, _ help: String, _ type: String, _ samples: [(String, String)]) {
            let name = prefix + suffix
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labelText, value) in samples { lines.append("\(name)\(labelText.isEmpty ? "" : "{\(labelText)}") \(value)") }
        }
        metric(
            "last_success_timestamp_seconds", "When a run last succeeded (UNIX seconds).", "gauge",
            [("", lastSuccess.map { String(format: "%.0f", $0) } ?? "0")])
        metric(
            "last_run_timestamp_seconds", "When the last run ended (UNIX seconds).", "gauge",
            [("", String(format: "%.0f", now.timeIntervalSince1970))])
        metric("last_run_id", "The last run's id.", "gauge", [("", String(runID))])
        metric(
            "last_run_status", "1 for the last run's status.", "gauge",
            RunStatus.allCases.filter { $0 != .running }.map { ("\(labels),status=\"\($0.rawValue)\"", $0 == status ? "1" : "0") })
        metric(
            "run_duration_seconds", "Duration of the last run attempt.", "gauge",
            [(labels, String(format: "%.3f", counters.durationSeconds))])
        metric("grants_in_scope", "Grants in the last run's window.", "gauge", [(labels, String(counters.grantsInScope))])
        metric("grants_checked", "Grants checked by the last run attempt.", "gauge", [(labels, String(counters.checked))])
        metric(
            "verdicts", "Grants of the last run by verdict.", "gauge",
            Verdict.allCases.map { ("\(labels),verdict=\"\($0.rawValue)\"", String(counters.verdicts[$0] ?? 0)) })
        metric(
            "unverified_grants", "Grants without a verified answer in the last run (retried by the next).", "gauge",
            [(labels, String(counters.unverified))])
        metric(
            "units_clawed_back", "Units taken back by ledger entries of the last run.", "gauge", [(labels, String(counters.unitsClawedBack))]
        )
        metric("units_returned", "Units given back by reversals of the last run.", "gauge", [(labels, String(counters.unitsReturned))])
        metric("ledger_entries_created", "Ledger entries written by the last run.", "gauge", [(labels, String(counters.newLedgerEntries))])
        let store = series.api
        metric("requests", "\(store) requests of the last run.", "gauge", [(labels, String(counters.storeRequests))])
        metric(
            "rate_limited", "\(store) answers refusing for a rate limit in the last run.", "gauge", [(labels, String(counters.storeRateLimited))])
        if let deprecated = series.deprecatedRequestNames {
            metric(
                deprecated.requests, "Deprecated: \(prefix)requests under its 1.x name.", "gauge", [(labels, String(counters.storeRequests))])
            metric(
                deprecated.rateLimited, "Deprecated: \(prefix)rate_limited under its 1.x name.", "gauge",
                [(labels, String(counters.storeRateLimited))])
        }
        metric(
            "missed_notifications", "Refunds the notification feed missed, found by the audit sample.", "gauge",
            [(labels, String(counters.missedNotifications))])
        metric(
            "audited_grants", "Grants re-verified per transaction by the notifications strategy's audit.", "gauge",
            [(labels, String(counters.auditedGrants))])
        metric(
            "grants_default_partition_rows", "Grants outside every monthly partition (should be 0).", "gauge",
            [("", String(counters.defaultPartitionRows))])
        metric("dry_run", "1 when the last run was a dry run.", "gauge", [("", dryRun ? "1" : "0")])
        if let speed {
            let store = "store=\"\(speed.store.rawValue)\""
            func quantiles(_ median: Double?, _ p99: Double?) -> [(String, String)] {
                [(median, "0.5"), (p99, "0.99")].compactMap { value, quantile in
                    value.map { ("\(store),quantile=\"\(quantile)\"", String(format: "%.0f", $0)) }
                }
            }
            metric(
                "refund_to_ledger_seconds", "Seconds from the store's refund to its clawback entry, over the entries of the last 30 days.",
                "gauge", quantiles(speed.toLedgerMedian, speed.toLedgerP99))
            metric(
                "refund_to_acknowledgement_seconds",
                "Seconds from the store's refund to the game's acknowledgement, over the entries of the last 30 days it acknowledged.", "gauge",
                quantiles(speed.toAcknowledgementMedian, speed.toAcknowledgementP99))
            metric(
                "units_recovered_ratio", "Units the game applied of those taken back by the entries of the last 30 days.", "gauge",
                [(store, speed.unitsOwed > 0 ? String(format: "%.4f", Double(speed.unitsRecovered) / Double(speed.unitsOwed)) : "1")])
        }
        if let pending { lines += ledgerLines(pending, source: series.source) }

        try await target.deliver(lines, job: group(prefix), succeeded: status == .succeeded && !dryRun)
    }

    /// The Pushgateway's group of the series under `prefix`: the prefix itself (`clawback_google_sweep`).
    package static func group(_ prefix: String) -> String { prefix.hasSuffix("_") ? String(prefix.dropLast()) : prefix }

    /// One job's unlabelled gauges, each name under `prefix`: first when it last succeeded (carried over from
    /// the previous file when this run did not) and when it last ran.
    package struct JobGauges {
        let prefix: String
        let target: MetricsTarget
        let succeeded: Bool
        var lines: [String] = []

        package init(prefix: String, target: MetricsTarget, succeeded: Bool, now: Date, success: String, run: String) {
            self.prefix = prefix
            self.target = target
            self.succeeded = succeeded
            let lastSuccess = succeeded ? now.timeIntervalSince1970 : target.previousValue(prefix + "last_success_timestamp_seconds")
            add("last_success_timestamp_seconds", success, lastSuccess.map { String(format: "%.0f", $0) } ?? "0")
            add("last_run_timestamp_seconds", run, String(format: "%.0f", now.timeIntervalSince1970))
        }

        package mutating func add(_ suffix: String, _ help: String, _ value: Int) { add(suffix, help, String(value)) }

        package mutating func add(_ suffix: String, _ help: String, _ value: String) {
            lines += ["# HELP \(prefix)\(suffix) \(help)", "# TYPE \(prefix)\(suffix) gauge", "\(prefix)\(suffix) \(value)"]
        }

        package func write() async throws(MetricsTarget.NotDelivered) {
            try await target.deliver(lines, job: MetricsFile.group(prefix), succeeded: succeeded)
        }
    }

    /// The ledger's pending work (entries the game has not acknowledged, and the oldest one's age), in a file
    /// of its own: written by `clawback ledger pending`, cheap enough for a daily cron.
    public static func writeLedger(to target: MetricsTarget, pending: StaffLedger.Pending) async throws(MetricsTarget.NotDelivered) {
        try await target.deliver(ledgerLines(pending, source: "ledger_pending"), job: "clawback_ledger_pending", succeeded: true)
    }

    /// `source` says which command wrote the series (`run`, `ledger_pending`): both files may sit in one
    /// textfile directory, and node_exporter refuses the same series twice. Alert on `max without (source)`.
    static func ledgerLines(_ pending: StaffLedger.Pending, source: String) -> [String] {
        [
            "# HELP clawback_ledger_pending_entries Ledger entries the game has not acknowledged yet (reviews aside).",
            "# TYPE clawback_ledger_pending_entries gauge",
            "clawback_ledger_pending_entries{source=\"\(source)\"} \(pending.entries)",
            "# HELP clawback_ledger_oldest_pending_age_seconds Age of the oldest entry the game has not acknowledged (0: none).",
            "# TYPE clawback_ledger_oldest_pending_age_seconds gauge",
            "clawback_ledger_oldest_pending_age_seconds{source=\"\(source)\"} " + String(format: "%.0f", pending.oldestAgeSeconds),
        ]
    }

    /// A positive value of the unlabelled metric `name` in the file at `path`, if there is one.
    package static func previousValue(_ name: String, in path: String) -> Double? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "").flatMap { $0 > 0 ? $0 : nil }
        }
        return nil
    }
}
