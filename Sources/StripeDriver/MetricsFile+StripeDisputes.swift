public import Foundation
public import Job

// Stripe's own job's series, beside its runs' (`StripeDriver.metricsSeries`): the disputes job's file.
extension MetricsFile {
    /// `clawback stripe disputes`' series (`clawback_stripe_disputes_…`): what the last run read, stored and
    /// submitted, what it left, and the disputes left for the next run. Alert on disputes left for the next
    /// run two hours running, and on no success in three hours: a dispute's deadline does not wait.
    public static func writeStripeDisputes(
        to target: MetricsTarget, outcome: StripeDisputesRun.Outcome, succeeded: Bool, now: Date = Date()
    ) async throws(MetricsTarget.NotDelivered) {
        var file = JobGauges(
            prefix: "clawback_stripe_disputes_", target: target, succeeded: succeeded, now: now,
            success: "When a run last moved every dispute as far as it goes (UNIX seconds).", run: "When the last run ended (UNIX seconds).")
        file.add("read", "Disputes of the last 60 days the last run read.", outcome.disputesRead)
        file.add("new", "Disputes the last run recorded for the first time (awaiting a response, or of a granted payment).", outcome.newlySeen)
        file.add("reopened", "Inquiries escalated to a chargeback the last run reopened, to answer again.", outcome.reopened)
        file.add("evidence_stored", "Disputes whose evidence the last run decided and stored.", outcome.stored)
        file.add("submitted", "Disputes whose evidence the last run submitted.", outcome.submitted)
        file.add("left", "Disputes the last run left by policy (no grant, no response allowed, too near the deadline).", outcome.left)
        file.add("closed", "Disputes no longer awaiting a response before clawback submitted (answered in the Dashboard).", outcome.closed)
        file.add("refused", "Disputes whose evidence Stripe refused in the last run (a 400 no retry changes): for a person.", outcome.refused)
        file.add("unfinished", "Disputes left for the next run: the game's facts or a POST failed.", outcome.notFinished.count)
        file.add(
            "fraud_warnings_new", "Early fraud warnings about granted payments the last run recorded for the first time.", outcome.fraudWarningsNew)
        file.add(
            "fraud_warnings_unread", "1 when the last run could not read Radar's early fraud warnings (the key lacks Early fraud warnings: Read?).",
            outcome.fraudWarningsUnread == nil ? 0 : 1)
        file.add("requests", "Requests the last run sent to Stripe.", outcome.stripeRequests)
        try await file.write()
    }
}
