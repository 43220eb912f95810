public import AppStore
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
public struct ConsumptionAnswerPolicy: Sendable {
    public var settings: ClawbackConfiguration.RefundRequests
    public var app: ClawbackConfiguration.AppRefundRequests

    public init(settings: ClawbackConfiguration.RefundRequests, app: ClawbackConfiguration.AppRefundRequests) {
        self.settings = settings
        self.app = app
    }

    /// Why no answer can be given: final (the request becomes `unanswerable`, with the reason).
    public enum Unanswerable: Error, Sendable, Equatable, CustomStringConvertible {
        /// No grant, and grants of the purchase's date may have been pruned: delivered or not is unknown.
        case deliveryUnknown

        public var description: String {
            switch self {
            case .deliveryUnknown:
                "no grant found, and grants of the purchase's month are no longer kept: whether it was delivered is unknown, so nothing is said"
            }
        }
    }

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

    /// consumed / granted in milliunits of a percent, rounded half up, within 0...100000; nil when either
    /// is unknown or nothing was granted.
    static func milliPercent(consumed: Int64?, of granted: Int64?) -> Int32? {
        guard let consumed, let granted, granted > 0 else { return nil }
        let clamped = min(max(consumed, 0), granted)
        let (product, overflow) = clamped.multipliedReportingOverflow(by: 200_000)
        let milli = overflow ? Double(clamped) / Double(granted) * 100_000 : Double((product / granted + 1) / 2)
        return Int32(min(100_000, max(0, milli.rounded())))
    }
}
