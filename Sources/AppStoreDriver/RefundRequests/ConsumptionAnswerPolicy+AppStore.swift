public import AppStore
public import Job
public import Storage

/// Turns the game's facts about a purchase into the answer Apple asked for (docs/refund-requests.md):
/// - deliveryStatus: DELIVERED when the purchase was granted; UNDELIVERED_OTHER when it was not (and the
///   grants of its date are still kept, so "not granted" is known rather than forgotten);
/// - consumptionPercentage: the hook's units consumed over the units granted, in milliunits; left out when
///   the hook does not know, and for auto-renewable subscriptions (Apple computes those itself); 0 when not
///   delivered, as Apple requires;
/// - refundPreference: GRANT_FULL when not delivered or nothing was consumed, DECLINE from the configured
///   share consumed, GRANT_PRORATED in between (or no preference, as configured), none when consumption is
///   unknown;
/// - sampleContentProvided: per product, from the app's configuration.
extension ConsumptionAnswerPolicy {
    public func answer(facts: DeliveryFacts, productID: String?, productType: ProductType?) throws(Unanswerable) -> ConsumptionRequest {
        let sample = app.sampleContentProvided(for: productID)
        switch facts.delivery {
        case .unknown:
            throw .deliveryUnknown
        case .notDelivered:
            return ConsumptionRequest(
                customerConsented: true, consumptionPercentage: productType == nil || productType == .autoRenewable ? nil : 0,
                deliveryStatus: .undeliveredOther,
                refundPreference: .grantFull, sampleContentProvided: sample)
        case .delivered:
            // Apple refuses a percentage for an auto-renewable; with the type unknown, none is sent either.
            let percentage =
                productType == nil || productType == .autoRenewable ? nil : Self.milliPercent(consumed: facts.unitsConsumed, of: facts.unitsGranted)
            return ConsumptionRequest(
                customerConsented: true, consumptionPercentage: percentage, deliveryStatus: .delivered,
                refundPreference: preference(percentage), sampleContentProvided: sample)
        }
    }

    func preference(_ percentage: Int32?) -> RefundPreference? {
        guard let percentage else { return nil }
        if percentage == 0 { return .grantFull }
        if percentage >= Int32(settings.declineAtConsumedPercent) * 1000 { return .decline }
        // Below the decline threshold (at most 100%), so strictly between 0 and 100000 as Apple requires.
        return settings.prorateBelow ? .grantProrated : nil
    }
}
