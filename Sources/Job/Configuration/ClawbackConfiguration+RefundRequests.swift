public import Foundation
import Reconciliation

/// The `refund_requests` settings (docs/refund-requests.md): which refund outcome every store's refund
/// question is answered with, and per app what may be said.
extension ClawbackConfiguration {
    /// Per app: whether the studio may answer at all, and what it says about samples.
    public struct AppRefundRequests: Sendable, Equatable {
        /// The app obtained the customer's consent to share consumption data with Apple. Without it Apple
        /// asks developers not to answer, so requests are recorded and left unanswered.
        public var customerConsented = false
        /// `sampleContentProvided` for the app's products, unless listed below.
        public var sampleContentProvided = false
        /// Products for which a free sample or trial was provided before purchase.
        public var sampleContentProducts: [String] = []
        /// Since when the grants table holds every purchase the game delivered (the grant path recorded them
        /// all, or they were imported). Only a purchase made since then, and whose month is still kept, can
        /// be answered "not delivered" when it has no grant; nil: never (such requests are left unanswered).
        public var grantsCompleteSince: Date?

        public init() {}

        public func sampleContentProvided(for productID: String?) -> Bool {
            productID.map { sampleContentProducts.contains($0) } == true || sampleContentProvided
        }
    }

    /// The policy every store's refund question is answered by (Apple's refund requests, Google's chargeback
    /// reviews); the App Store's job reads the section's other keys (its feed's lookback and overlap, its
    /// wait before "not delivered", its metrics file) through its driver.
    public struct RefundRequests: Sendable, Equatable {
        /// Ask to DECLINE when the player consumed at least this percentage of the purchase.
        public var declineAtConsumedPercent = 50
        /// Below that (but above 0), ask for GRANT_PRORATED; false: state no preference.
        public var prorateBelow = true

        public init() {}
    }
}

extension ClawbackConfiguration {
    static func parseAppRefundRequests(_ node: ConfigNode, into settings: inout AppRefundRequests, errors: inout [ConfigurationError]) {
        node.rejectUnknownKeys(
            ["customer_consented", "sample_content_provided", "sample_content_products", "grants_complete_since"], into: &errors)
        let since = node.child("grants_complete_since")
        if let date = since.value as? Date {
            settings.grantsCompleteSince = date
        } else if let text = since.string(into: &errors) {
            do {
                settings.grantsCompleteSince = try ReconciliationWindow.date(text)
            } catch {
                errors.append(ConfigurationError(field: since.path, problem: "\(error)"))
            }
        }
        if let flag = node.child("customer_consented").bool(into: &errors) { settings.customerConsented = flag }
        if let flag = node.child("sample_content_provided").bool(into: &errors) { settings.sampleContentProvided = flag }
        settings.sampleContentProducts = node.child("sample_content_products").list(into: &errors).compactMap { $0.string(into: &errors) }
    }

    static func parseRefundRequests(_ node: ConfigNode, into settings: inout RefundRequests, errors: inout [ConfigurationError]) {
        node.rejectUnknownKeys(Set(["decline_at_consumed_percent", "prorate_below"]).union(storeSharedKeys("refund_requests")), into: &errors)
        func bounded(_ key: String, _ range: ClosedRange<Int>) -> Int? {
            guard let value = node.child(key).int(into: &errors) else { return nil }
            guard range.contains(value) else {
                errors.append(
                    ConfigurationError(field: "refund_requests.\(key)", problem: "must be between \(range.lowerBound) and \(range.upperBound)"))
                return nil
            }
            return value
        }
        // 100 at most: a GRANT_PRORATED needs a share consumed below 100%.
        if let percent = bounded("decline_at_consumed_percent", 1...100) { settings.declineAtConsumedPercent = percent }
        if let flag = node.child("prorate_below").bool(into: &errors) { settings.prorateBelow = flag }
    }
}
