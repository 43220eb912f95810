import Foundation
public import GooglePlay
public import Job
public import Storage

/// The answer to Google's chargeback review from the game's facts about a purchase, by the policy Apple's
/// refund requests follow where Google's fields allow (docs/google-play.md, "Chargeback reviews"):
/// - not delivered (no grant, and the game knows it would have one): APPROVE, 0% consumed;
/// - delivered: the share consumed from the studio's `clawback.units_consumed` hook, in milliunits; APPROVE
///   when nothing was consumed, DECLINE from `refund_requests.decline_at_consumed_percent`, NEUTRAL in between
///   (Google has no prorated refund) and when the hook does not know: never a blanket DECLINE;
/// - the uses the studio's `clawback.usage_events` hook gives (the latest 1,000), under the purchase's
///   obfuscated account id;
/// - sampleContentProvided per product, from the app's `refund_requests` settings.
extension ConsumptionAnswerPolicy {
    public func reviewAnswer(token: String, facts: GoogleDeliveryFacts, productID: String?) throws(Unanswerable) -> (
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
            var share = Self.milliPercent(consumed: facts.unitsConsumed, of: facts.unitsGranted).map(Int.init)
            // A share that rounds to 0 of units that were consumed is not "nothing consumed".
            if share == 0, let used = facts.unitsConsumed, used > 0 { share = 1 }
            let (preference, reason) = reviewPreference(share)
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

    func reviewPreference(_ share: Int?) -> (RefundReviewAnswer.Preference, String) {
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
