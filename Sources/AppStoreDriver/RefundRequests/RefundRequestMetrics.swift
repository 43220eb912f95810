import Foundation
import Job
import Reports

/// Prometheus metrics of `clawback refund-requests answer`, in a file and a Pushgateway group of their own
/// (the hourly job and the monthly one must not overwrite each other's).
enum RefundRequestMetrics {
    static func write(_ outcome: RefundRequestRun.Outcome, to target: MetricsTarget, now: Date) async throws(MetricsTarget.NotDelivered) {
        var lastSuccess = target.previousValue("clawback_refund_requests_last_success_timestamp_seconds")
        if !outcome.isUnfinished { lastSuccess = now.timeIntervalSince1970 }
        let samples: [(String, String, Double)] = [
            (
                "clawback_refund_requests_last_success_timestamp_seconds", "When a run last finished with nothing left open (UNIX seconds).",
                lastSuccess ?? 0
            ),
            ("clawback_refund_requests_last_run_timestamp_seconds", "When the last run ended (UNIX seconds).", now.timeIntervalSince1970),
            ("clawback_refund_requests_open", "Refund requests still unanswered before their 12-hour deadline.", Double(outcome.open)),
            (
                "clawback_refund_requests_oldest_open_age_seconds", "Age of the oldest unanswered refund request (0: none).",
                outcome.oldestOpenAgeSeconds
            ),
            ("clawback_refund_requests_new", "Refund requests the last run recorded.", Double(outcome.newRequests)),
            (
                "clawback_refund_requests_waiting", "Requests without a grant yet, waiting before they are answered not delivered.",
                Double(outcome.waiting)
            ),
            ("clawback_refund_requests_answered", "Answers Apple accepted in the last run.", Double(outcome.answered)),
            ("clawback_refund_requests_refused", "Answers Apple refused (HTTP 400 or 404 4040010) in the last run.", Double(outcome.refusedByApple)),
            ("clawback_refund_requests_expired", "Requests whose deadline passed unanswered, found by the last run.", Double(outcome.expired)),
            (
                "clawback_refund_requests_unanswerable", "Requests the last run could not answer at all (delivery unknown, consent withdrawn).",
                Double(outcome.unanswerable)
            ),
            (
                "clawback_refund_requests_rejected_notifications", "Notifications that failed verification in the last run.",
                Double(outcome.rejectedNotifications)
            ),
            ("clawback_refund_requests_feeds_not_whole", "Feeds the last run could not read whole.", Double(outcome.feedsNotWhole)),
        ]
        var lines: [String] = []
        for (name, help, value) in samples {
            lines += ["# HELP \(name) \(help)", "# TYPE \(name) gauge", "\(name) " + String(format: "%.0f", value)]
        }
        try await target.deliver(lines, job: "clawback_refund_requests", succeeded: !outcome.isUnfinished)
    }
}
