import Foundation
import HTTP
import Job
import Locking
import Reconciliation
import Storage
import Stripe

/// `stripe-payments`: before the first grant, the window's charges and the refunds and disputes made since
/// its start are listed whole, 100 a page, in slices of the span read side by side (a day's margin each
/// side of the window); each grant whose
/// payment the lists hold is then decided in line, and a payment they do not hold is asked alone (its
/// PaymentIntent, its charge, that charge's refunds and disputes). A list read only in part fails the run:
/// nothing is concluded from a partial view. An item of a list in a shape clawback cannot read (a field of
/// another type) makes its own payment `unverified` (and no other): asking it alone may not read that
/// item at all. One that does not even say its payment (a charge) or its charge (a refund, dispute or
/// warning) fails the run, since it could be any payment's.
final class StripePaymentsGateway: StoreGateway {
    static let margin: TimeInterval = 86_400

    let client: StripeClient
    let shops: Set<String>
    /// False: nothing is listed and every payment is asked alone, its complete statement (the reference the
    /// lists are held to by the tests).
    let lists: Bool
    /// `stripe.early_fraud_warnings: review`: a payment Radar warned about that nothing took money from is a
    /// review, never units (Radar's warnings are read too: listed, or asked per payment).
    let reviewWarnings: Bool
    /// What the lists held: charges by PaymentIntent; refunds, disputes and warnings by charge.
    private let listed = Locked(Listing())

    struct Listing {
        var charges = ListedCharges()
        var refunds: [String: [Refund]] = [:]
        var disputes: [String: [Dispute]] = [:]
        var warnings: [String: [EarlyFraudWarning]] = [:]
        /// The PaymentIntents and charges an unreadable item belongs to: never answered from the lists.
        var unreadablePayments: Set<String> = []
        var unreadableCharges: Set<String> = []
        /// Unreadable items that name neither: the lists cannot be trusted for any payment.
        var unplaceable: [String] = []

        /// Holds `item`'s payment back from a verdict: the payment a charge names; the payment and the charge a
        /// refund, dispute or warning names. The lists file those by charge, so one whose charge cannot be
        /// read (as a charge whose PaymentIntent cannot be) could belong to any payment: unplaceable.
        mutating func setAside<Item>(_ item: StripeListed<Item>.Unreadable, path: String, isCharge: Bool) {
            if let payment = item.paymentIntent { unreadablePayments.insert(payment) }
            if !isCharge, let charge = item.charge { unreadableCharges.insert(charge) }
            if isCharge ? item.paymentIntent == nil : item.charge == nil {
                unplaceable.append("\(path) \(item.id ?? "(no id)"): \(item.problem)")
            }
        }
    }

    init(client: StripeClient, shops: Set<String>, lists: Bool = true, reviewWarnings: Bool = false) {
        self.client = client
        self.shops = shops
        self.lists = lists
        self.reviewWarnings = reviewWarnings
    }

    var statistics: RequestCounts { client.statistics }

    func prepare(_ context: RunContext) async throws {
        guard lists else { return }
        let window = context.selection.window
        let from = window.start - Self.margin
        // Each page goes into the listing as it comes, whichever slice it is of: the window's charges are
        // held once, never also in the slices' own arrays.
        let building = Locked(Listing())
        try await listSliced(Charge.self, "/v1/charges", from: from, until: window.end + Self.margin, into: building, isCharge: true) {
            if let intent = $1.paymentIntent { $0.charges.add($1, of: intent) }
        }
        // Refunds and disputes come after their charge: those made since the window's start cover its charges.
        try await listSliced(Refund.self, "/v1/refunds", from: from, until: nil, into: building) {
            if let charge = $1.charge { $0.refunds[charge, default: []].append($1) }
        }
        try await listSliced(Dispute.self, "/v1/disputes", from: from, until: nil, into: building) {
            if let charge = $1.charge { $0.disputes[charge, default: []].append($1) }
        }
        // Warnings come after their charge too.
        if reviewWarnings {
            try await listSliced(EarlyFraudWarning.self, "/v1/radar/early_fraud_warnings", from: from, until: nil, into: building) {
                if let charge = $1.charge { $0.warnings[charge, default: []].append($1) }
            }
        }
        // Taken out whole, so that sealing frees each chunk of charges as it moves it (none still shared).
        var listing = building.withLock { building in
            let taken = building
            building = Listing()
            return taken
        }
        listing.charges.seal()
        guard listing.unplaceable.isEmpty else {
            throw StripeError(
                .incompleteList,
                "Stripe listed \(listing.unplaceable.count) item(s) clawback cannot read nor tell the payment of, so no payment can be "
                    + "answered from the lists: \(listing.unplaceable.prefix(3).joined(separator: "; "))")
        }
        listed.withLock { $0 = listing }
    }

    /// How many time slices of a list are read at once. Each page waits for the one before it (it starts
    /// after its last id), so one walk of a million charges is ten thousand round trips end to end; slices of
    /// the span read side by side keep the pace (`stripe.requests_per_second`) the limit instead.
    static let slices = 8

    /// Every item of `path` created from `from` until `until` (nil: now, and anything after: the last
    /// slice is open-ended), read as `slices` spans of whole seconds side by side, each span whole or
    /// the whole list fails; each page filed into `building` as it comes, its items read one by one: each
    /// readable one by `file`, each unreadable one set aside (`Listing.setAside`).
    func listSliced<Item: StripeObject>(
        _ type: Item.Type, _ path: String, from: Date, until: Date?, into building: Locked<Listing>, isCharge: Bool = false,
        file: @escaping @Sendable (inout Listing, Item) -> Void
    ) async throws {
        let low = Int64(from.timeIntervalSince1970.rounded(.down))
        let high = max(low + 1, Int64((until ?? Date() + Self.margin).timeIntervalSince1970.rounded(.up)))
        let bounds = (0...Self.slices).map { low + (high - low) * Int64($0) / Int64(Self.slices) }
        let client = self.client
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<Self.slices where bounds[index] < bounds[index + 1] || index == Self.slices - 1 {
                var query = [("created[gte]", String(bounds[index]))]
                if until != nil || index < Self.slices - 1 { query.append(("created[lt]", String(bounds[index + 1]))) }
                group.addTask { [query] in
                    try await client.listEach(type, path, query: query) { page in
                        building.withLock { listing in
                            for item in page {
                                switch item {
                                case .read(let read): file(&listing, read)
                                case .unreadable(let unreadable): listing.setAside(unreadable, path: path, isCharge: isCharge)
                                }
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// The answer, or a review where Radar warned about a payment nothing touched (with `review`): Stripe
    /// shows no refund and no dispute of its charges, whatever their state, and the ledger never took from
    /// it. Anything else is the table's: a refund or a lost dispute taken back, one failed or won given back.
    func withWarnings(_ answer: StoreAnswer, _ warnings: [EarlyFraudWarning], touched: Bool, ledger: LedgerHistory) -> StoreAnswer {
        guard reviewWarnings, !touched, ledger.entries.allSatisfy({ $0.kind == .review }),
            let warning = warnings.min(by: { ($0.created, $0.id) < ($1.created, $1.id) }), case .verified(let statement) = answer,
            statement.refundKind == nil
        else { return answer }
        return .review(
            ReviewReason(rawValue: "stripe_early_fraud_warning"),
            detail: "Radar early fraud warning \(warning.id) (\(warning.fraudType)) and neither a refund nor a dispute: for a person; "
                + "clawback takes nothing back for a warning")
    }

    func localAnswer(for grant: Grant, ledger: LedgerHistory) -> StoreAnswer? {
        guard shops.contains(grant.bundleID) else { return nil }
        return listed.withLock { listing -> StoreAnswer? in
            let heldBack = StoreAnswer.unverified(
                reason: "Stripe listed an item of payment \(grant.transactionID) in a shape clawback cannot read: nothing is concluded of it")
            if listing.unreadablePayments.contains(grant.transactionID) { return heldBack }
            guard let charges = listing.charges.charges(of: grant.transactionID) else { return nil }
            let ids = Set(charges.map(\.id))
            guard ids.isDisjoint(with: listing.unreadableCharges) else { return heldBack }
            let refunds = ids.flatMap { listing.refunds[$0] ?? [] }
            let disputes = ids.flatMap { listing.disputes[$0] ?? [] }
            let reading = PaymentReading.read(
                paymentIntent: grant.transactionID, intentStatus: nil, charges: charges, refunds: refunds, disputes: disputes)
            return withWarnings(
                StripeStatementReading.answer(reading, for: grant), ids.flatMap { listing.warnings[$0] ?? [] },
                touched: !refunds.isEmpty || !disputes.isEmpty, ledger: ledger)
        }
    }

    func answer(for grant: Grant, ledger: LedgerHistory) async -> StoreAnswer {
        guard shops.contains(grant.bundleID) else {
            return .unverified(reason: "\(grant.bundleID) is not a web shop under stripe.shops")
        }
        if let local = localAnswer(for: grant, ledger: ledger) { return local }
        do {
            let path = "/v1/payment_intents/" + URLEncoding.pathSegment(grant.transactionID)
            let intent = try await client.get(PaymentIntent.self, path)
            guard intent.id == grant.transactionID else {
                return .unverified(reason: "Stripe answered payment \(intent.id) when asked for \(grant.transactionID)")
            }
            var charges: [Charge] = []
            var refunds: [Refund] = []
            var disputes: [Dispute] = []
            if let chargeID = intent.latestCharge {
                charges.append(try await client.get(Charge.self, "/v1/charges/" + URLEncoding.pathSegment(chargeID)))
                try await client.list(Refund.self, "/v1/refunds", query: [("charge", chargeID)]) { refunds += $0 }
                try await client.list(Dispute.self, "/v1/disputes", query: [("charge", chargeID)]) { disputes += $0 }
            }
            var warnings: [EarlyFraudWarning] = []
            if reviewWarnings, let chargeID = intent.latestCharge {
                // Only the warnings of this charge: a filter the answer ignored cannot make another payment's ours.
                try await client.list(EarlyFraudWarning.self, "/v1/radar/early_fraud_warnings", query: [("charge", chargeID)]) {
                    warnings += $0.filter { $0.charge == chargeID }
                }
            }
            let reading = PaymentReading.read(
                paymentIntent: intent.id, intentStatus: intent.status, charges: charges, refunds: refunds, disputes: disputes)
            return withWarnings(
                StripeStatementReading.answer(reading, for: grant), warnings, touched: !refunds.isEmpty || !disputes.isEmpty, ledger: ledger)
        } catch {
            // Stripe's 404 for this key's account and mode is not documented as proof the payment never was.
            if error.isMissingObject {
                return .notFound(conclusive: false, detail: "Stripe has no payment \(grant.transactionID) (404 resource_missing)")
            }
            return .unverified(reason: "\(error)")
        }
    }
}
