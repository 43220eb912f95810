public import Foundation
public import Reconciliation
import Reports
public import Storage

/// Prometheus textfile metrics (for node_exporter's textfile collector), written atomically (`AtomicFile`),
/// so a scrape never reads half a file. The time of the last success is carried over from the previous
/// file when this run did not succeed, so "no success in 35 days" stays computable.
public enum MetricsFile {
    /// Whose series a file holds. Each run kind's series are named apart: the files sit in one textfile
    /// directory, node_exporter refuses a series twice, and each kind's last success must stay its own.
    public enum Series: Sendable, Equatable {
        /// `clawback run`, the monthly App Store run: `clawback_…`.
        case monthly
        /// `clawback run --daily`: `clawback_daily_…`.
        case daily
        /// `clawback run --strategy google-orders`, the monthly Google Play run: `clawback_google_…`.
        case googlePlay
        /// `clawback run --daily --strategy google-orders`, Google Play's daily run: `clawback_google_daily_…`.
        case googlePlayDaily

        public init(strategy: RunStrategy) {
            switch strategy {
            case .notifiedRefunds: self = .daily
            case .googleOrders: self = .googlePlay
            case .googleVoidedOrders: self = .googlePlayDaily
            case .transactionInfo, .notifications, .customerHistory, .receipt: self = .monthly
            }
        }

        var isGooglePlay: Bool { self == .googlePlay || self == .googlePlayDaily }

        var prefix: String {
            switch self {
            case .monthly: "clawback_"
            case .daily: "clawback_daily_"
            case .googlePlay: "clawback_google_"
            case .googlePlayDaily: "clawback_google_daily_"
            }
        }

        /// The ledger series' `source` label.
        var source: String {
            switch self {
            case .monthly: "run"
            case .daily: "daily_run"
            case .googlePlay: "google_run"
            case .googlePlayDaily: "google_daily_run"
            }
        }

        /// The request series' names after the prefix, the same for every store (`clawback_requests`,
        /// `clawback_google_requests`); the App Store's series also keep their 1.x names, `…apple_requests` and
        /// `…apple_rate_limited`, deprecated (CHANGELOG) and gone in the next major release.
        var deprecatedRequestNames: (requests: String, rateLimited: String)? { isGooglePlay ? nil : ("apple_requests", "apple_rate_limited") }
    }

    /// How far back a run's file measures how fast refunds came back (`speed`).
    public static let speedSpan: TimeInterval = 30 * 86_400

    public static func write(
        to path: String, status: RunStatus, counters: RunCounters, runID: Int64, window: String, dryRun: Bool,
        pending: StaffLedger.Pending? = nil, speed: RecoverySpeed? = nil, series: Series = .monthly, now: Date = Date()
    ) throws {
        let prefix = series.prefix
        var lastSuccess = previousValue(prefix + "last_success_timestamp_seconds", in: path)
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
        let store = series.isGooglePlay ? "Google Play Developer API" : "App Store Server API"
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

        try AtomicFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: path)
    }

    /// The Google Play sweep's figures (`clawback google-play sweep-voids --metrics-file`): its last success
    /// (carried over from the previous file when this sweep did not succeed), what it read and kept, and the
    /// apps not read whole or swept too late. Alert on no success in two days: Google forgets after 30.
    public static func writeSweep(to path: String, outcome: GoogleVoidSweep.Outcome, succeeded: Bool, now: Date = Date()) throws {
        var file = JobGauges(
            prefix: "clawback_google_sweep_", path: path, succeeded: succeeded, now: now,
            success: "When a sweep last read every app whole (UNIX seconds).", run: "When the last sweep ended (UNIX seconds).")
        file.add("apps", "Google Play apps the last sweep read.", outcome.apps)
        file.add("voids_read", "Voided purchases the last sweep read.", outcome.voidsRead)
        file.add("voids_new", "Voided purchases the last sweep kept for the first time.", outcome.newVoids)
        file.add("apps_not_read_whole", "Apps whose feed the last sweep could not read whole (read again next time).", outcome.unreadApps.count)
        file.add("apps_with_gap", "Apps not swept for longer than Google keeps voided purchases (30 days).", outcome.gaps.count)
        try file.write()
    }

    /// `clawback google-play notifications`' series (`clawback_google_notifications_…`): what the last run read
    /// and kept, the chargeback reviews it answered, and those still open (the oldest one's age).
    public static func writeGoogleNotifications(
        to path: String, outcome: GoogleNotificationsRun.Outcome, succeeded: Bool, now: Date = Date()
    ) throws {
        var file = JobGauges(
            prefix: "clawback_google_notifications_", path: path, succeeded: succeeded, now: now,
            success: "When a run last read the subscription to its end and left no review unanswered (UNIX seconds).",
            run: "When the last run ended (UNIX seconds).")
        file.add("messages_read", "Pub/Sub messages the last run pulled.", outcome.messagesRead)
        file.add("messages_new", "Messages the last run kept for the first time.", outcome.newMessages)
        file.add("messages_duplicate", "Deliveries of messages kept before (Pub/Sub delivers at least once).", outcome.duplicates)
        file.add(
            "messages_kept_unread", "Messages the last run kept for a person: unreadable, or about an app not configured.",
            outcome.unreadable + outcome.unknownPackages)
        file.add("messages_not_acknowledged", "Kept messages the last run could not acknowledge (delivered again).", outcome.notAcknowledged)
        file.add("reviews_answered", "Chargeback reviews the last run answered.", outcome.answered)
        file.add("reviews_refused", "Answers Google refused in the last run.", outcome.refusedByGoogle)
        file.add(
            "reviews_unknown", "Answers sent but never seen taken before the deadline's margin, settled by the last run.", outcome.unknownOutcome)
        file.add(
            "reviews_unconfirmed", "Sends in the last run whose fate Google did not show (5xx, a broken connection): sent again.", outcome.unconfirmed
        )
        file.add(
            "reviews_not_taken", "Sends in the last run Google did not take (429, 503, a refused permission): sent again.", outcome.notTaken)
        file.add(
            "reviews_set_aside", "Reviews the last run left open because the game's hooks gave no usable facts: tried again next run.",
            outcome.setAside)
        file.add("pubsub_failed", "1 when the last run could not read Pub/Sub (unreachable, refused), else 0.", outcome.pubSubFailure == nil ? 0 : 1)
        file.add("reviews_expired", "Reviews whose 24 hours passed without an answer, settled by the last run.", outcome.expired)
        file.add("reviews_unanswerable", "Reviews the game could not answer, settled by the last run.", outcome.unanswerable)
        file.add("reviews_open", "Chargeback reviews still to answer before their deadline.", outcome.open)
        file.add("oldest_open_review_age_seconds", "Age of the oldest open review (0: none).", Int(outcome.oldestOpenAgeSeconds.rounded()))
        try file.write()
    }

    /// One job's textfile of unlabelled gauges, each name under `prefix`: first when it last succeeded (carried
    /// over from the previous file when this run did not) and when it last ran.
    struct JobGauges {
        let prefix: String
        let path: String
        var lines: [String] = []

        init(prefix: String, path: String, succeeded: Bool, now: Date, success: String, run: String) {
            self.prefix = prefix
            self.path = path
            let lastSuccess = succeeded ? now.timeIntervalSince1970 : previousValue(prefix + "last_success_timestamp_seconds", in: path)
            add("last_success_timestamp_seconds", success, lastSuccess.map { String(format: "%.0f", $0) } ?? "0")
            add("last_run_timestamp_seconds", run, String(format: "%.0f", now.timeIntervalSince1970))
        }

        mutating func add(_ suffix: String, _ help: String, _ value: Int) { add(suffix, help, String(value)) }

        mutating func add(_ suffix: String, _ help: String, _ value: String) {
            lines += ["# HELP \(prefix)\(suffix) \(help)", "# TYPE \(prefix)\(suffix) gauge", "\(prefix)\(suffix) \(value)"]
        }

        func write() throws { try AtomicFile.write(Array((lines.joined(separator: "\n") + "\n").utf8), to: path) }
    }

    /// The ledger's pending work (entries the game has not acknowledged, and the oldest one's age), in a file
    /// of its own: written by `clawback ledger pending`, cheap enough for a daily cron.
    public static func writeLedger(to path: String, pending: StaffLedger.Pending) throws {
        try AtomicFile.write(Array((ledgerLines(pending, source: "ledger_pending").joined(separator: "\n") + "\n").utf8), to: path)
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
    static func previousValue(_ name: String, in path: String) -> Double? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix(name + " ") {
            return Double(line.split(separator: " ").last ?? "").flatMap { $0 > 0 ? $0 : nil }
        }
        return nil
    }
}
