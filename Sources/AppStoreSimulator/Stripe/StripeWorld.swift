public import Foundation

/// A web shop's payments as Stripe holds them: each PaymentIntent with its charges, refunds and disputes,
/// and the restricted keys the account accepts. What the simulator's Stripe side serves.
public struct StripeWorld: Sendable, Codable, Equatable {
    public var keys: Set<String>
    /// Restricted keys' resources (`charges`, `refunds`, `disputes`, `payment_intents`, `events`): a key
    /// named here reads and writes only those (`disputes:read`: reads them only), and is answered 403 for the
    /// others. A key not named reads and writes everything.
    public var keyResources: [String: Set<String>]?
    public var payments: [String: StripePaymentRecord]

    public init(keys: Set<String>, keyResources: [String: Set<String>]? = nil, payments: [StripePaymentRecord] = []) {
        self.keys = keys
        self.keyResources = keyResources
        self.payments = Dictionary(payments.map { ($0.id, $0) }) { first, _ in first }
    }
}

/// One PaymentIntent (`pi_…`) and what happened to its money.
public struct StripePaymentRecord: Sendable, Codable, Equatable {
    public var id: String
    public var amount: Int64
    public var currency: String
    public var created: Date
    public var livemode: Bool
    /// `succeeded`, `processing`, `canceled`, `requires_payment_method`, ...
    public var status: String
    public var charges: [StripeChargeRecord]
    public var refunds: [StripeRefundRecord]
    public var disputes: [StripeDisputeRecord]
    /// Radar's early fraud warnings about its charge (nil in worlds written before they were simulated).
    public var fraudWarnings: [StripeFraudWarningRecord]?

    public init(
        id: String, amount: Int64, currency: String, created: Date, livemode: Bool = true, status: String = "succeeded",
        charges: [StripeChargeRecord]? = nil, refunds: [StripeRefundRecord] = [], disputes: [StripeDisputeRecord] = [],
        fraudWarnings: [StripeFraudWarningRecord]? = nil
    ) {
        self.id = id
        self.amount = amount
        self.currency = currency
        self.created = created
        self.livemode = livemode
        self.status = status
        self.charges =
            charges ?? (status == "succeeded" ? [StripeChargeRecord(id: "ch_" + id.dropFirst(3), amount: amount, created: created + 2)] : [])
        self.refunds = refunds
        self.disputes = disputes
        self.fraudWarnings = fraudWarnings
    }

    /// The charge the PaymentIntent's `latest_charge` names: its newest.
    var latestCharge: StripeChargeRecord? { charges.max { ($0.created, $0.id) < ($1.created, $1.id) } }
}

public struct StripeChargeRecord: Sendable, Codable, Equatable {
    public var id: String
    public var amount: Int64
    /// `succeeded`, `pending` or `failed`.
    public var status: String
    public var captured: Bool
    public var created: Date

    public init(id: String, amount: Int64, status: String = "succeeded", captured: Bool = true, created: Date) {
        self.id = id
        self.amount = amount
        self.status = status
        self.captured = captured
        self.created = created
    }
}

public struct StripeRefundRecord: Sendable, Codable, Equatable {
    public var id: String
    /// The charge refunded (its payment's latest by default).
    public var charge: String?
    public var amount: Int64
    /// `pending`, `requires_action`, `succeeded`, `failed`, `canceled`.
    public var status: String
    public var created: Date

    public init(id: String, charge: String? = nil, amount: Int64, status: String = "succeeded", created: Date) {
        self.id = id
        self.charge = charge
        self.amount = amount
        self.status = status
        self.created = created
    }
}

/// A Radar early fraud warning: the card's issuer reported the charge as fraud. It moves no money; a
/// dispute often follows.
public struct StripeFraudWarningRecord: Sendable, Codable, Equatable {
    public var id: String
    /// `made_with_stolen_card`, `unauthorized_use_of_card`, `card_never_received`, ...
    public var fraudType: String
    /// Whether Stripe deems it actionable (not yet disputed nor fully refunded).
    public var actionable: Bool
    public var created: Date

    public init(id: String, fraudType: String = "made_with_stolen_card", actionable: Bool = true, created: Date) {
        self.id = id
        self.fraudType = fraudType
        self.actionable = actionable
        self.created = created
    }
}

public struct StripeDisputeRecord: Sendable, Codable, Equatable {
    public var id: String
    public var charge: String?
    public var amount: Int64
    /// `warning_needs_response`, `warning_under_review`, `warning_closed`, `needs_response`, `under_review`,
    /// `won`, `lost`, `prevented`.
    public var status: String
    public var reason: String
    public var created: Date
    /// `evidence_details.due_by` (nil: none given; the epoch: the issuer allows no response).
    public var dueBy: Date?
    /// The evidence staged or submitted so far, by field (`product_description`).
    public var evidence: [String: String]?
    /// Submissions of the evidence so far.
    public var submissionCount: Int?
    /// The studio accepted the dispute (`POST /v1/disputes/{id}/close`).
    public var closedByMerchant: Bool?
    /// The dispute fee Stripe withdrew with a chargeback, in the payment currency's minor unit (nil: 1500).
    public var fee: Int64?
    /// A won dispute's reinstatement returned the fee (Stripe's pages disagree on whether it does).
    public var feeReturned: Bool?
    /// When the issuer escalated it from an inquiry to a chargeback (`StripeSimulator.escalate`).
    public var escalatedAt: Date?

    public init(
        id: String, charge: String? = nil, amount: Int64, status: String, reason: String = "fraudulent", created: Date, dueBy: Date? = nil
    ) {
        self.id = id
        self.charge = charge
        self.amount = amount
        self.status = status
        self.reason = reason
        self.created = created
        self.dueBy = dueBy
    }
}
