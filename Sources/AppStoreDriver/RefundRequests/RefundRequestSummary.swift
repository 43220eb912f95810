import Foundation
import Job

/// The end-of-job summary of `clawback refund-requests answer` on stdout.
public enum RefundRequestSummary {
    /// As `clawback run`'s: with `--log-format json` one JSON line, so the job's log holds only JSON lines.
    public static func render(_ outcome: RefundRequestRun.Outcome, json: Bool, oneLine: Bool) -> String {
        if json || oneLine { return SummaryJSON.render(outcome, oneLine: oneLine) }
        return TextTable.render(
            [
                ["notifications read", String(outcome.notificationsRead)],
                ["rejected (failed verification)", String(outcome.rejectedNotifications)],
                ["feeds not read whole", String(outcome.feedsNotWhole)],
                ["new refund requests", String(outcome.newRequests)],
                ["Apple decisions joined", String(outcome.decisionsJoined)],
                ["answered", "\(outcome.answered) (sent again after an interruption: \(outcome.resent))"],
                ["refused by Apple", String(outcome.refusedByApple)],
                ["cannot be answered", String(outcome.unanswerable)],
                ["waiting (no grant yet)", String(outcome.waiting)],
                ["not answered this time", String(outcome.notAnswered)],
                ["expired unanswered", String(outcome.expired)],
                [
                    "still open",
                    String(outcome.open) + (outcome.open > 0 ? String(format: " (oldest %.0f min)", outcome.oldestOpenAgeSeconds / 60) : ""),
                ],
                ["Apple requests", String(outcome.appleRequests)],
            ].map { [$0[0], $0[1]] })
    }
}
