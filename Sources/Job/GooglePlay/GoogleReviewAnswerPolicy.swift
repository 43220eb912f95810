import Foundation
public import GooglePlay
public import Storage

/// Turns the game's facts about a purchase into the answer to Google's chargeback review, by the policy Apple's
/// refund requests follow where Google's fields allow (docs/google-play.md, "Chargeback reviews"):
/// - not delivered (no grant, and the game knows it would have one): APPROVE, 0% consumed;
/// - delivered: the share consumed from the studio's `clawback.units_consumed` hook, in milliunits; APPROVE
///   when nothing was consumed, DECLINE from `refund_requests.decline_at_consumed_percent`, NEUTRAL in between
///   (Google has no prorated refund) and when the hook does not know: never a blanket DECLINE;
/// - the uses the studio's `clawback.usage_events` hook gives (the latest 1,000), under the purchase's
///   obfuscated account id;
/// - sampleContentProvided per product, from the app's `refund_requests` settings.
public struct GoogleReviewAnswerPolicy: Sendable {
    public var settings: ClawbackConfiguration.RefundRequests
    public var app: ClawbackConfiguration.AppRefundRequests

    public init(settings: ClawbackConfiguration.RefundRequests, app: ClawbackConfiguration.AppRefundRequests) {
        self.settings = settings
        self.app = app
    }

    /// Why no answer can be given: final (the review becomes `unanswerable`, with the reason).
    public enum Unanswerable: Error, Sendable, Equatable, CustomStringConvertible {
        case deliveryUnknown

        public var description: String {
            "no grant found, and the game cannot know it did not deliver (grants_complete_since not set or later, or the purchase's month no longer kept): nothing is said"
        }
    }

    public func answer(token: String, facts: GoogleDeliveryFacts, productID: String?) throws(Unanswerable) -> (
        answer: RefundReviewAnswer, reason: String
    ) {
        let sample = app.sampleContentProvided(for: productID ?? facts.productID)
        switch facts.delivery {
        case .unknown:
            throw .deliveryUnknown
        case .notDelivered:
            return (
                RefundReviewAnswer(pendingRefundToken: token, preference: .approve, sampleContentProvided: sample, consumedMilliunits: 0),
                "not delivered: the game has no grant for this purchase"
            )
        case .delivered:
            let share = ConsumptionAnswerPolicy.milliPercent(consumed: facts.unitsConsumed, of: facts.unitsGranted).map(Int.init)
            let (preference, reason) = preference(share)
            let uses = facts.uses.map {
                RefundReviewAnswer.UsageEvent(time: $0.at, description: $0.description, obfuscatedAccountId: facts.obfuscatedAccountID)
            }
            return (
                RefundReviewAnswer(
                    pendingRefundToken: token, preference: preference, sampleContentProvided: sample, consumedMilliunits: share, usageEvents: uses),
                reason
            )
        }
    }

    func preference(_ share: Int?) -> (RefundReviewAnswer.Preference, String) {
        guard let share else { return (.neutral, "delivered; how much was consumed is unknown (clawback.units_consumed gave none)") }
        if share == 0 { return (.approve, "delivered, nothing consumed") }
        if share >= settings.declineAtConsumedPercent * 1000 {
            return (
                .decline, "delivered, \(Double(share) / 1000)% consumed (at least decline_at_consumed_percent, \(settings.declineAtConsumedPercent)%)"
            )
        }
        return (.neutral, "delivered, \(Double(share) / 1000)% consumed (below decline_at_consumed_percent)")
    }
}
