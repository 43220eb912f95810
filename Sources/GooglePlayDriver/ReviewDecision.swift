import Foundation
import GooglePlay
import Job
public import Storage

/// What clawback would do about one chargeback review, from its order as Google answered it and the game's
/// facts: decided without writing anything, so that the hourly run stores it and a preview only prints it.
public enum ReviewDecision: Sendable, Equatable {
    /// The answer to store and send.
    case answer(StoredReviewAnswer)
    /// Never answerable (Google does not know the order, it names no purchase token, the game cannot say
    /// whether it delivered): final, with why.
    case unanswerable(String)
    /// The game's hooks gave no usable facts this time (an error, a value that is no share of the purchase):
    /// open, tried again next run.
    case setAside(String)
    /// The order could not be read this time: asked again next run.
    case notNow(String)

    /// The decision for `review`. Reads the grant and calls the studio's hooks; writes nothing. A database
    /// failure that is not the hook's (a lost connection, no space, a privilege) is thrown.
    static func make(
        _ review: GoogleNotificationStore.OpenReview, order answer: OrderAnswer?, configuration: ClawbackConfiguration, session: DatabaseSession
    ) async throws -> ReviewDecision {
        let order: Order
        switch answer {
        case .order(let found): order = found
        case .notFound: return .unanswerable("Google's Orders API does not know order \(review.orderID)")
        case .unanswered(let why), .refused(let why): return .notNow(why)
        case nil: return .notNow("the order was not asked")
        }
        guard let token = order.purchaseToken, !token.isEmpty else {
            return .unanswerable("Google's order \(review.orderID) names no purchase token")
        }
        let app = configuration.googleApps.first { $0.packageName == review.packageName }?.refundRequests ?? .init()
        let purchasedAt = order.createdAt
        let facts: GoogleDeliveryFacts
        do {
            facts = try await session.run {
                try GoogleNotificationStore.facts(
                    purchaseToken: token, packageName: review.packageName, purchasedAt: purchasedAt, grantsCompleteSince: app.grantsCompleteSince,
                    on: $0)
            }
        } catch let error as DatabaseError where error.isHookFailure {
            // The studio's hook refused or timed out for this purchase (its service down for one player): this
            // review waits, the others go on. The database's own trouble (a lost connection, no space, a
            // privilege) is not the hook's: it ends the run as any database failure does.
            return .setAside("reading the grant and the hooks (clawback.units_consumed, clawback.usage_events) failed: \(error)")
        }
        if facts.delivery == .delivered, let consumed = facts.unitsConsumed, let granted = facts.unitsGranted, consumed < 0 || consumed > granted {
            // Not a share of this purchase (a sentinel, another purchase's units): a hook bug, never a statement.
            return .setAside("clawback.units_consumed returned \(consumed) for a grant of \(granted) units: outside 0...\(granted)")
        }
        let policy = ConsumptionAnswerPolicy(settings: configuration.refundRequests, app: app)
        let decided: (answer: RefundReviewAnswer, reason: String)
        do {
            decided = try policy.reviewAnswer(token: review.pendingRefundToken, facts: facts, productID: order.lineItems?.first?.productId)
        } catch {
            return .unanswerable(error.description)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = String(decoding: try encoder.encode(decided.answer), as: UTF8.self)
        return .answer(
            StoredReviewAnswer(
                body: body, preference: decided.answer.refundPreference.rawValue,
                consumedMilliunits: decided.answer.consumptionPercentageMilliunits, usageEvents: decided.answer.consumptionUsageEvents?.count ?? 0,
                facts: facts, reason: decided.reason, purchasedAt: purchasedAt))
    }
}
