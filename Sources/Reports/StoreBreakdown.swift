public import Reconciliation
public import Storage

/// What a flagged purchase is, as finance keeps it apart: each store's refunds, partial refunds,
/// chargebacks, fraud and Family Sharing revocations, the reversals of earlier refunds, and the purchases a
/// person has to look at. The summary's `store` section and the HTML page's "By store" table count by it.
public enum FlaggedKind: String, Sendable, CaseIterable, Comparable {
    case refund
    case partialRefund = "partial_refund"
    /// A bank or card dispute: Google's CHARGEBACK (the order's refund reason, or a void's).
    case chargeback
    /// Google's voids for fraud or friendly fraud.
    case fraud
    /// Apple's Family Sharing revocation.
    case familyRevoke = "family_revoke"
    /// A refund the studio's rules leave with the player (Google's refund without revoke, or by amount, under
    /// `google.refund_without_revoke` or `google.amount_refunds: leave`): refunded money, no units taken.
    case refundLeft = "refund_left_with_player"
    case refundReversed = "refund_reversed"
    /// For a person: unknown to the store, mismatched, or a refund the rules could not turn into units.
    case review
    /// Not answered yet: the next run asks again.
    case unverified

    public init?(_ purchase: FlaggedPurchase) {
        if purchase.verdict == .unverified {
            self = .unverified
        } else if purchase.needsReview || purchase.action == .flaggedForReview {
            // A refund the rules could not turn into units (a review entry) is a person's, not money moved.
            self = .review
        } else if purchase.verdict == .refundReversed {
            self = .refundReversed
        } else if purchase.isRefund && purchase.action == CheckAction.none {
            // Refunded, and left with the player by the studio's choice: nothing to take back.
            self = .refundLeft
        } else if purchase.isRefund {
            switch purchase.revocationType {
            case "CHARGEBACK": self = .chargeback
            case "FRAUD": self = .fraud
            case "FAMILY_REVOKE": self = .familyRevoke
            case "REFUND_PRORATED": self = .partialRefund
            default: self = .refund
            }
        } else {
            return nil
        }
    }

    /// A refund of some form, whose amount finance sees (reversals and reviews move no money of their own).
    public var isRefund: Bool { ![.refundReversed, .review, .unverified].contains(self) }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs) ?? 0 < allCases.firstIndex(of: rhs) ?? 0
    }

    /// For people, in the summary's note and the HTML table.
    public var label: String {
        switch self {
        case .refund: "refunds"
        case .partialRefund: "partial refunds"
        case .chargeback: "chargebacks"
        case .fraud: "fraud"
        case .familyRevoke: "Family Sharing revocations"
        case .refundLeft: "refunds left with the player (the studio's choice)"
        case .refundReversed: "refunds reversed"
        case .review: "needs review (unknown, mismatched, or a refund a person decides)"
        case .unverified: "not verified yet (the next run asks again)"
        }
    }
}

extension ReportTotals {
    /// A row of the store breakdown: a store, a kind and the store's currency ("" without a price).
    public struct StoreKey: Sendable, Hashable, Comparable {
        public var store: Store
        public var kind: FlaggedKind
        public var currency: String

        public static func < (lhs: Self, rhs: Self) -> Bool {
            (lhs.store.rawValue, lhs.kind, lhs.currency) < (rhs.store.rawValue, rhs.kind, rhs.currency)
        }
    }
}
