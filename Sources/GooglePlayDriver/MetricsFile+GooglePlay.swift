public import Foundation
public import Job

// Google Play's own jobs' series, beside its runs' (`GooglePlayDriver.metricsSeries`): the sweep's and the
// notifications run's files.
extension MetricsFile {
    /// The Google Play sweep's figures (`clawback google-play sweep-voids --metrics-file`): its last success
    /// (carried over from the previous file when this sweep did not succeed), what it read and kept, and the
    /// apps not read whole or swept too late. Alert on no success in two days: Google forgets after 30.
    public static func writeSweep(
        to target: MetricsTarget, outcome: GoogleVoidSweep.Outcome, succeeded: Bool, now: Date = Date()
    ) async throws(MetricsTarget.NotDelivered) {
        var file = JobGauges(
            prefix: "clawback_google_sweep_", target: target, succeeded: succeeded, now: now,
            success: "When a sweep last read every app whole (UNIX seconds).", run: "When the last sweep ended (UNIX seconds).")
        file.add("apps", "Google Play apps the last sweep read.", outcome.apps)
        file.add("voids_read", "Voided purchases the last sweep read.", outcome.voidsRead)
        file.add("voids_new", "Voided purchases the last sweep kept for the first time.", outcome.newVoids)
        file.add("apps_not_read_whole", "Apps whose feed the last sweep could not read whole (read again next time).", outcome.unreadApps.count)
        file.add("apps_with_gap", "Apps not swept for longer than Google keeps voided purchases (30 days).", outcome.gaps.count)
        try await file.write()
    }

    /// `clawback google-play notifications`' series (`clawback_google_notifications_…`): what the last run read
    /// and kept, the chargeback reviews it answered, and those still open (the oldest one's age).
    public static func writeGoogleNotifications(
        to target: MetricsTarget, outcome: GoogleNotificationsRun.Outcome, succeeded: Bool, now: Date = Date()
    ) async throws(MetricsTarget.NotDelivered) {
        var file = JobGauges(
            prefix: "clawback_google_notifications_", target: target, succeeded: succeeded, now: now,
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
        try await file.write()
    }
}
