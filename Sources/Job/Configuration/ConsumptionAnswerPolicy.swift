import Storage

/// The studio's policy for answering a store's refund question with the game's facts (docs/refund-requests.md,
/// docs/google-play.md "Chargeback reviews"): the settings of `refund_requests` and of the purchase's app.
/// Each store's driver turns it into its own answer (the App Store's ConsumptionRequest, Google Play's review
/// answer); the share consumed is computed here, once, for all of them.
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

    /// consumed / granted in milliunits of a percent, rounded half up, within 0...100000; nil when either
    /// is unknown or nothing was granted.
    public static func milliPercent(consumed: Int64?, of granted: Int64?) -> Int32? {
        guard let consumed, let granted, granted > 0 else { return nil }
        let clamped = min(max(consumed, 0), granted)
        let (product, overflow) = clamped.multipliedReportingOverflow(by: 200_000)
        let milli = overflow ? Double(clamped) / Double(granted) * 100_000 : Double((product / granted + 1) / 2)
        return Int32(min(100_000, max(0, milli.rounded())))
    }
}
