import AppStore
import Foundation
import Job
import Storage

/// What the hourly job would do with one open, consented refund request of a configured app: decided without
/// writing anything, so that `RefundRequestRun` records and sends it and `refund-requests answer --dry-run`
/// only prints it.
enum RefundRequestDecision: Sendable {
    /// The answer stored by an earlier run, sent again exactly (never decided anew).
    case resend(ConsumptionRequest)
    /// A new answer, checked against Apple's rules and encoded, with the facts it came from.
    case answer(ConsumptionRequest, encoded: String, facts: DeliveryFacts)
    /// No grant yet: the grant path may still record it (StoreKit finishes a purchase at the app's next launch).
    case waitForGrant
    /// Never answerable (the game cannot say whether it delivered): final, with why.
    case unanswerable(String)
    /// Not this time (a hook's error or impossible value, a rule the answer would break, the deadline's
    /// margin): the request stays open and alerts; the next run tries again.
    case notNow(String)

    static func make(
        _ request: OpenRefundRequest, app: ClawbackConfiguration.App, productType: ProductType?, configuration: ClawbackConfiguration,
        session: DatabaseSession, now: @Sendable () -> Date
    ) async throws -> RefundRequestDecision {
        if let stored = request.storedAnswer {
            guard let decoded = try? JSONDecoder().decode(ConsumptionRequest.self, from: Data(stored.utf8)) else {
                return .notNow("the stored answer is not a ConsumptionRequest: not sent")
            }
            return .resend(decoded)
        }
        let policy = ConsumptionAnswerPolicy(settings: configuration.refundRequests, app: app.refundRequests)
        let facts: DeliveryFacts
        do {
            facts = try await session.run { connection in
                try RefundRequestStore.facts(
                    transactionID: request.transactionID, originalTransactionID: request.originalTransactionID, bundleID: request.bundleID,
                    purchasedAt: request.purchasedAt, grantsCompleteSince: app.refundRequests.grantsCompleteSince, on: connection)
            }
        } catch let error as DatabaseError {
            // Most likely the studio's hook failed: said, retried by the next run.
            return .notNow("reading the grant and clawback.units_consumed failed: \(error)")
        }
        if facts.delivery == .notDelivered && now() < request.requestedAt + Double(configuration.refundRequestFeed.undeliveredAfterHours) * 3600 {
            return .waitForGrant
        }
        if let consumed = facts.unitsConsumed, consumed < 0 || consumed > (facts.unitsGranted ?? 0) {
            // Not a share of this purchase (a sentinel, another purchase's units): a hook bug, never a statement.
            return .notNow(
                "clawback.units_consumed returned \(consumed) for a grant of \(facts.unitsGranted ?? 0) units: outside 0...\(facts.unitsGranted ?? 0)"
            )
        }
        let body: ConsumptionRequest
        do {
            body = try policy.answer(facts: facts, productID: request.productID, productType: productType)
        } catch {
            return .unanswerable("\(error)")
        }
        do {
            try body.validate(productType: productType)
        } catch {
            // A bug or a setting that makes the policy break Apple's rules: open, so that it alerts (exit 75).
            return .notNow("\(error)")
        }
        guard let data = try? body.json() else { return .notNow("the answer could not be encoded as JSON") }
        // Decided before storing: an answer stored as `sending` that the client then refuses to send (past the
        // margin) would later expire as one that "may have been accepted".
        guard now() < request.deadline - RefundRequestWork.deadlineMargin else {
            return .notNow("less than 5 minutes before Apple's 12-hour deadline: not stored, not sent")
        }
        return .answer(body, encoded: String(decoding: data, as: UTF8.self), facts: facts)
    }
}
