import Job
import Reconciliation

/// What Google Play states that a person has to look at: each is a review entry of its own reason, never a
/// clawback. The raw values are stored in the ledger (`review:<value>`) and never change.
extension ReviewReason {
    /// The grant has no order id, so Google's Orders API cannot be asked (a promotion code's purchase has
    /// none, and no money was paid): asking again could never give another answer.
    static let withoutOrderID = ReviewReason(rawValue: "google_grant_without_order_id")
    /// The voids the sweep kept disagree with the order (a void of another order, a void while the order
    /// shows nothing refunded, voided units that do not match the refunded amount): Google warns the two
    /// may disagree; a person decides, and a later run still claws back what the order comes to state.
    static let voidsDisagree = ReviewReason(rawValue: "google_voids_disagree_with_order")
    /// Google's order for the grant's order id is another purchase (token), product or quantity: the grant
    /// does not match what Google sold, whatever happened to the order since.
    static let orderDisagrees = ReviewReason(rawValue: "google_order_disagrees_with_grant")
    /// Google shows the order CANCELED: canceled before it was processed, so never charged.
    static let canceledAtGoogle = ReviewReason(rawValue: "canceled_at_google")
    /// Google shows the order not refunded while a clawback of it is open: Google documents no reversal of
    /// a refund, so whether to give back is a person's decision.
    static let refundNoLongerShown = ReviewReason(rawValue: "refund_no_longer_shown_by_google")

    /// Google answered the order, but its reading stayed undecided for the same reason in
    /// `GoogleOrdersGateway.undecidedRuns` monthly runs in a row (several line items, a processed order with a
    /// cancellation, a refund reason this version does not know, a refund pending for months): asking again
    /// has not settled it, and an unverified grant keeps its month incomplete and its prune waiting.
    static let orderUndecided = ReviewReason(rawValue: "google_order_undecided")

    /// Every reason Google Play's reading gives (for tests and docs).
    static let googlePlay: [ReviewReason] = [
        .withoutOrderID, .voidsDisagree, .orderDisagrees, .canceledAtGoogle, .refundNoLongerShown, .orderUndecided,
    ]
}
