public import Foundation

/// An object of Stripe's API with an id (what a list pages on: `starting_after`).
public protocol StripeObject: Decodable, Sendable {
    var id: String { get }
}

extension KeyedDecodingContainer {
    /// A timestamp as Stripe gives every one: whole seconds since 1970.
    func unixTime(forKey key: Key) throws -> Date {
        Date(timeIntervalSince1970: TimeInterval(try decode(Int64.self, forKey: key)))
    }
}

/// A field Stripe may give as an id or, expanded, as the object: read as the id either way.
struct ExpandableID: Decodable, Sendable {
    let id: String

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            id = text
        } else {
            struct Object: Decodable { let id: String }
            id = try container.decode(Object.self).id
        }
    }
}

/// A PaymentIntent: the web shop's payment of one purchase, whose id a Stripe grant carries as its
/// transaction id. Only the fields clawback reads; statuses are kept as Stripe's text (Stripe adds values).
public struct PaymentIntent: StripeObject, Equatable {
    public var id: String
    public var amount: Int64
    public var amountReceived: Int64
    public var currency: String
    public var status: String
    public var latestCharge: String?
    public var created: Date
    public var livemode: Bool

    enum CodingKeys: String, CodingKey {
        case id, amount, currency, status, created, livemode
        case amountReceived = "amount_received"
        case latestCharge = "latest_charge"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        amount = try container.decode(Int64.self, forKey: .amount)
        amountReceived = try container.decodeIfPresent(Int64.self, forKey: .amountReceived) ?? 0
        currency = try container.decode(String.self, forKey: .currency)
        status = try container.decode(String.self, forKey: .status)
        latestCharge = try container.decodeIfPresent(ExpandableID.self, forKey: .latestCharge)?.id
        created = try container.unixTime(forKey: .created)
        livemode = try container.decode(Bool.self, forKey: .livemode)
    }
}

/// A Charge: the money a PaymentIntent collected. `refunded` is true only once fully refunded, so the
/// refunds themselves are read, never the flag.
public struct Charge: StripeObject, Equatable {
    public var id: String
    public var amount: Int64
    public var amountCaptured: Int64
    public var amountRefunded: Int64
    public var currency: String
    public var status: String
    public var paid: Bool
    public var captured: Bool
    public var paymentIntent: String?
    public var created: Date
    public var livemode: Bool

    enum CodingKeys: String, CodingKey {
        case id, amount, currency, status, paid, captured, created, livemode
        case amountCaptured = "amount_captured"
        case amountRefunded = "amount_refunded"
        case paymentIntent = "payment_intent"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        amount = try container.decode(Int64.self, forKey: .amount)
        amountCaptured = try container.decodeIfPresent(Int64.self, forKey: .amountCaptured) ?? 0
        amountRefunded = try container.decodeIfPresent(Int64.self, forKey: .amountRefunded) ?? 0
        currency = try container.decode(String.self, forKey: .currency)
        status = try container.decode(String.self, forKey: .status)
        paid = try container.decodeIfPresent(Bool.self, forKey: .paid) ?? false
        captured = try container.decodeIfPresent(Bool.self, forKey: .captured) ?? false
        paymentIntent = try container.decodeIfPresent(ExpandableID.self, forKey: .paymentIntent)?.id
        created = try container.unixTime(forKey: .created)
        livemode = try container.decode(Bool.self, forKey: .livemode)
    }

    /// A charge as read before (a listing that held it in another form gives it back whole).
    public init(
        id: String, amount: Int64, amountCaptured: Int64, amountRefunded: Int64, currency: String, status: String, paid: Bool,
        captured: Bool, paymentIntent: String?, created: Date, livemode: Bool
    ) {
        self.id = id
        self.amount = amount
        self.amountCaptured = amountCaptured
        self.amountRefunded = amountRefunded
        self.currency = currency
        self.status = status
        self.paid = paid
        self.captured = captured
        self.paymentIntent = paymentIntent
        self.created = created
        self.livemode = livemode
    }
}

/// A Refund of (part of) a charge. `status` is a plain string in Stripe's spec, not an enum.
public struct Refund: StripeObject, Equatable {
    public var id: String
    public var amount: Int64
    public var currency: String
    public var status: String?
    public var charge: String?
    public var paymentIntent: String?
    public var created: Date

    enum CodingKeys: String, CodingKey {
        case id, amount, currency, status, charge, created
        case paymentIntent = "payment_intent"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        amount = try container.decode(Int64.self, forKey: .amount)
        currency = try container.decode(String.self, forKey: .currency)
        status = try container.decodeIfPresent(String.self, forKey: .status)
        charge = try container.decodeIfPresent(ExpandableID.self, forKey: .charge)?.id
        paymentIntent = try container.decodeIfPresent(ExpandableID.self, forKey: .paymentIntent)?.id
        created = try container.unixTime(forKey: .created)
    }
}

/// A Dispute of a charge, through its life: an inquiry (`warning_…`, no money moved), a chargeback
/// (`needs_response`, `under_review`: the amount withdrawn), and its end (`won`: reinstated, `lost`).
public struct Dispute: StripeObject, Equatable {
    public var id: String
    public var amount: Int64
    public var currency: String
    public var status: String
    public var reason: String?
    public var charge: String?
    public var paymentIntent: String?
    public var created: Date
    /// `evidence_details.due_by`: evidence must be submitted before it; nil when Stripe gives none, and
    /// the Unix epoch when the issuer allows no response.
    public var dueBy: Date?
    /// `evidence_details.submission_count`: submissions so far ("typically" one is allowed).
    public var submissionCount: Int
    /// `evidence_details.has_evidence`: evidence is staged.
    public var hasEvidence: Bool
    /// What the dispute cost in fees so far, as its balance transactions state it (`DisputeFee`).
    public var fee: DisputeFee

    enum CodingKeys: String, CodingKey {
        case id, amount, currency, status, reason, charge, created
        case paymentIntent = "payment_intent"
        case evidenceDetails = "evidence_details"
        case balanceTransactions = "balance_transactions"
    }

    /// One of the dispute's balance transactions, for its fee: the withdrawal carries the dispute fee, a
    /// reinstatement any fee returned (a negative fee).
    struct FeeLine: Decodable {
        let fee: Int64
        let currency: String
    }

    enum EvidenceDetailsKeys: String, CodingKey {
        case dueBy = "due_by"
        case submissionCount = "submission_count"
        case hasEvidence = "has_evidence"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        amount = try container.decode(Int64.self, forKey: .amount)
        currency = try container.decode(String.self, forKey: .currency)
        status = try container.decode(String.self, forKey: .status)
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
        charge = try container.decodeIfPresent(ExpandableID.self, forKey: .charge)?.id
        paymentIntent = try container.decodeIfPresent(ExpandableID.self, forKey: .paymentIntent)?.id
        created = try container.unixTime(forKey: .created)
        if container.contains(.evidenceDetails), try !container.decodeNil(forKey: .evidenceDetails) {
            let details = try container.nestedContainer(keyedBy: EvidenceDetailsKeys.self, forKey: .evidenceDetails)
            dueBy = try details.decodeIfPresent(Int64.self, forKey: .dueBy).map { Date(timeIntervalSince1970: TimeInterval($0)) }
            submissionCount = try details.decodeIfPresent(Int.self, forKey: .submissionCount) ?? 0
            hasEvidence = try details.decodeIfPresent(Bool.self, forKey: .hasEvidence) ?? false
        } else {
            dueBy = nil
            submissionCount = 0
            hasEvidence = false
        }
        // Balance transactions that cannot be read make the fee unknown, not the dispute unreadable.
        do {
            fee = DisputeFee(try container.decodeIfPresent([FeeLine].self, forKey: .balanceTransactions))
        } catch {
            fee = .unknown
        }
    }

    /// Evidence is taken while the dispute awaits the studio's response: a chargeback's (`needs_response`)
    /// or an inquiry's (`warning_needs_response`).
    public var awaitsResponse: Bool { status == "needs_response" || status == "warning_needs_response" }
}

/// The fees of a dispute, read from its balance transactions (docs.stripe.com: the withdrawal carries the
/// dispute fee; whether a won dispute's fee comes back differs between Stripe's pages, so only a
/// reinstatement's own negative fee counts as returned). The settlement currency may differ from the
/// dispute's. Fail closed: balance transactions that cannot be read, or fees in several currencies, are
/// `unknown`, never 0.
public enum DisputeFee: Sendable, Equatable {
    /// No balance transaction (an empty list): nothing withdrawn, no fee (an inquiry).
    case none
    /// The net fee, in the minor unit of `currency` (Stripe's lowercase code).
    case charged(minor: Int64, currency: String)
    case unknown

    /// The fee of readable balance transactions (nil: the field is absent or null, which Stripe's spec does
    /// not allow: unknown, not none).
    init(_ lines: [Dispute.FeeLine]?) {
        guard let lines else {
            self = .unknown
            return
        }
        guard let currency = lines.first?.currency else {
            self = .none
            return
        }
        guard lines.allSatisfy({ $0.currency == currency }) else {
            self = .unknown
            return
        }
        var total: Int64 = 0
        for line in lines {
            let (sum, overflow) = total.addingReportingOverflow(line.fee)
            guard !overflow else {
                self = .unknown
                return
            }
            total = sum
        }
        self = .charged(minor: total, currency: currency)
    }
}

/// A Radar early fraud warning (`radar.early_fraud_warning`): the card's issuer reported the charge as
/// fraud. It moves no money; a fraud dispute often follows. clawback shows it and never refunds.
public struct EarlyFraudWarning: StripeObject, Equatable {
    public var id: String
    public var charge: String?
    public var paymentIntent: String?
    /// The issuer's kind of fraud (`made_with_stolen_card`, …), as Stripe gives it.
    public var fraudType: String
    /// Stripe deems it actionable: the charge is neither disputed nor fully refunded yet.
    public var actionable: Bool
    public var created: Date

    enum CodingKeys: String, CodingKey {
        case id, charge, actionable, created
        case paymentIntent = "payment_intent"
        case fraudType = "fraud_type"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        charge = try container.decodeIfPresent(ExpandableID.self, forKey: .charge)?.id
        paymentIntent = try container.decodeIfPresent(ExpandableID.self, forKey: .paymentIntent)?.id
        fraudType = try container.decode(String.self, forKey: .fraudType)
        actionable = try container.decode(Bool.self, forKey: .actionable)
        created = try container.unixTime(forKey: .created)
    }
}

/// Any object of a list, read for its id only (a list that is probed, not read).
public struct StripeAnyObject: StripeObject {
    public var id: String
}

/// A page of a list: `{"object": "list", "data": [...], "has_more": ...}`.
/// A page of a list as the client pages through it.
protocol StripePage: Decodable {
    var hasMore: Bool { get }
    /// What the page is, for an error's message.
    static var description: String { get }
}

struct StripeList<Item: Decodable>: StripePage {
    let data: [Item]
    let hasMore: Bool
    static var description: String { "list of \(Item.self)" }

    enum CodingKeys: String, CodingKey {
        case data, object
        case hasMore = "has_more"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard try container.decode(String.self, forKey: .object) == "list" else {
            throw DecodingError.dataCorruptedError(forKey: .object, in: container, debugDescription: "not a list")
        }
        data = try container.decode([Item].self, forKey: .data)
        hasMore = try container.decode(Bool.self, forKey: .hasMore)
    }
}

/// An item of a list read on its own (`StripeClient.listEach`): read, or not, with why and its id if
/// that much could be read.
public enum StripeListed<Item: StripeObject>: Decodable, Sendable {
    case read(Item)
    case unreadable(Unreadable)

    /// What could still be read of an item that could not be: its id and the payment and charge it belongs
    /// to (each nil when not even that could be read), and why.
    public struct Unreadable: Sendable, Equatable {
        public var id: String?
        public var paymentIntent: String?
        public var charge: String?
        public var problem: String
    }

    private struct Identified: Decodable { let id: String }
    private struct PaymentLink: Decodable {
        let paymentIntent: ExpandableID
        enum CodingKeys: String, CodingKey { case paymentIntent = "payment_intent" }
    }
    private struct ChargeLink: Decodable { let charge: ExpandableID }

    public init(from decoder: any Decoder) throws {
        do {
            self = .read(try Item(from: decoder))
        } catch {
            self = .unreadable(
                Unreadable(
                    id: try? Identified(from: decoder).id, paymentIntent: try? PaymentLink(from: decoder).paymentIntent.id,
                    charge: try? ChargeLink(from: decoder).charge.id, problem: "\(error)"))
        }
    }

    /// The item's id, read or not (nil: not even that could be read).
    public var id: String? {
        switch self {
        case .read(let item): item.id
        case .unreadable(let item): item.id
        }
    }
}

/// An event of the account (`GET /v1/events`, the last 30 days only): its type, when it happened, and the
/// PaymentIntent its object (a refund, a dispute, a charge) belongs to. The object itself is a snapshot of
/// that moment: clawback reads only which payment it names, and asks the payment as it stands.
public struct StripeEvent: StripeObject, Equatable {
    public var id: String
    public var type: String
    public var created: Date
    /// The `payment_intent` of `data.object` (nil when it has none).
    public var paymentIntent: String?

    enum CodingKeys: String, CodingKey { case id, type, created, data }
    struct Payload: Decodable {
        struct Object: Decodable {
            let paymentIntent: ExpandableID?
            enum CodingKeys: String, CodingKey { case paymentIntent = "payment_intent" }
        }
        let object: Object
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        type = try container.decode(String.self, forKey: .type)
        created = try container.unixTime(forKey: .created)
        paymentIntent = try container.decode(Payload.self, forKey: .data).object.paymentIntent?.id
    }
}
