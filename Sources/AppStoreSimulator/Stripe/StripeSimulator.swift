public import Foundation
import Locking

/// Stripe as clawback and Stripe's own Python library see it, for the calls clawback makes: a PaymentIntent,
/// a charge, a dispute, and the lists of PaymentIntents, charges, refunds, disputes and events (newest first, `limit` up to 100,
/// `starting_after`, `created[gte|gt|lte|lt]`, by `charge` or `payment_intent`), behind a bearer key, with
/// Stripe's error bodies and, on request, its 429s and 500s; and a dispute's evidence posted (staged or
/// submitted, under an Idempotency-Key) or the dispute closed. Served under `/v1/` by the simulator's process.
public final class StripeSimulator: Sendable {
    static let prefix = "/v1/"

    private let state: Locked<StripeWorld>
    let faults = Locked(StripeFaults())
    public let stats: SimulatorStats
    /// Every request's `Stripe-Version` header ("" when absent), in arrival order.
    let versions = Locked<[String]>([])

    /// Stripe lists and serves events of the last 30 days only.
    static let eventRetention: TimeInterval = 30 * 86_400
    let clock: @Sendable () -> Date
    /// The POSTs done, by Idempotency-Key: their form and their answer, replayed for the same key.
    let idempotent = Locked<[String: (form: [String], reply: SimulatorReply)]>([:])

    public init(world: StripeWorld, stats: SimulatorStats = SimulatorStats(), clock: @escaping @Sendable () -> Date = Date.init) {
        state = Locked(world)
        self.stats = stats
        self.clock = clock
    }

    public var world: StripeWorld { state.withLock { $0 } }
    public func update(_ change: (inout StripeWorld) -> Void) { state.withLock { change(&$0) } }
    public func setFaults(_ faults: StripeFaults) { self.faults.withLock { $0 = faults } }
    /// The `Stripe-Version` each request named, in arrival order.
    public var requestedVersions: [String] { versions.withLock { $0 } }

    public static func serves(_ path: String) -> Bool { path.hasPrefix(prefix) }

    public func handle(_ request: SimulatorRequest) -> SimulatorReply {
        versions.withLock { $0.append(request.header("Stripe-Version") ?? "") }
        guard let authorization = request.header("Authorization"), authorization.hasPrefix("Bearer "),
            world.keys.contains(String(authorization.dropFirst("Bearer ".count)))
        else {
            return Self.error(401, type: "invalid_request_error", code: nil, message: "Invalid API Key provided")
        }
        let key = String(authorization.dropFirst("Bearer ".count))
        let resource = request.path.dropFirst(Self.prefix.count).split(separator: "/").first.map(String.init) ?? ""
        // A restricted key's resource grants reading and writing; `resource:read` reading only.
        if let allowed = world.keyResources?[key], !allowed.contains(resource) && (request.method != "GET" || !allowed.contains(resource + ":read")) {
            return Self.error(
                403, type: "invalid_request_error", code: nil,
                message: "The provided key '\(key.prefix(8))***' does not have the required permissions for this endpoint on account 'acct_sim'.")
        }
        guard request.method == "GET" || (request.method == "POST" && resource == "disputes") else {
            return Self.error(405, type: "invalid_request_error", code: nil, message: "only GET, and POST of disputes, are simulated")
        }
        let fault = faults.withLock { $0.next() }
        switch fault {
        case .rateLimited:
            stats.count(endpoint: "stripe.429")
            return Self.error(429, type: "invalid_request_error", code: "rate_limit", message: "Too many requests hit the API too quickly.")
        case .serverError:
            stats.count(endpoint: "stripe.500")
            return Self.error(500, type: "api_error", code: nil, message: "An unknown error occurred", shouldRetry: true)
        case nil: break
        }
        let parts = request.path.dropFirst(Self.prefix.count).split(separator: "/", omittingEmptySubsequences: false).map {
            SimulatorRequest.percentDecode($0)
        }
        if request.method == "POST" { return post(request, parts: parts) }
        let world = self.world
        switch (parts.first, parts.count) {
        case ("payment_intents", 2):
            stats.count(endpoint: "stripe.payment_intents.retrieve")
            guard let payment = world.payments[parts[1]] else { return Self.missing("payment_intent", parts[1], param: "intent") }
            return Self.json(Self.paymentIntent(payment))
        case ("payment_intents", 1):
            stats.count(endpoint: "stripe.payment_intents.list")
            let items = world.payments.values.map { payment in
                Item(id: payment.id, created: payment.created, charge: nil, paymentIntent: payment.id, json: Self.paymentIntent(payment))
            }
            return list(items, request: request, url: "/v1/payment_intents")
        case ("charges", 2):
            stats.count(endpoint: "stripe.charges.retrieve")
            guard let (payment, charge) = Self.charge(parts[1], in: world) else { return Self.missing("charge", parts[1], param: "charge") }
            return Self.json(Self.charge(charge, of: payment))
        case ("charges", 1):
            stats.count(endpoint: "stripe.charges.list")
            let items = world.payments.values.flatMap { payment in payment.charges.map { (payment, $0) } }.map { payment, charge in
                Item(id: charge.id, created: charge.created, charge: charge.id, paymentIntent: payment.id, json: Self.charge(charge, of: payment))
            }
            return list(items, request: request, url: "/v1/charges")
        case ("refunds", 1):
            stats.count(endpoint: "stripe.refunds.list")
            let items = world.payments.values.flatMap { payment in payment.refunds.map { (payment, $0) } }.map { payment, refund in
                let charge = refund.charge ?? payment.latestCharge?.id
                return Item(
                    id: refund.id, created: refund.created, charge: charge, paymentIntent: payment.id,
                    json: Self.refund(refund, charge: charge, of: payment))
            }
            return list(items, request: request, url: "/v1/refunds")
        case ("disputes", 2):
            stats.count(endpoint: "stripe.disputes.retrieve")
            for payment in world.payments.values {
                if let dispute = payment.disputes.first(where: { $0.id == parts[1] }) {
                    return Self.json(Self.dispute(dispute, charge: dispute.charge ?? payment.latestCharge?.id, of: payment))
                }
            }
            return Self.missing("dispute", parts[1], param: "dispute")
        case ("disputes", 1):
            stats.count(endpoint: "stripe.disputes.list")
            let items = world.payments.values.flatMap { payment in payment.disputes.map { (payment, $0) } }.map { payment, dispute in
                let charge = dispute.charge ?? payment.latestCharge?.id
                return Item(
                    id: dispute.id, created: dispute.created, charge: charge, paymentIntent: payment.id,
                    json: Self.dispute(dispute, charge: charge, of: payment))
            }
            return list(items, request: request, url: "/v1/disputes")
        case ("radar", 2) where parts[1] == "early_fraud_warnings":
            stats.count(endpoint: "stripe.early_fraud_warnings.list")
            let items = world.payments.values.flatMap { payment in (payment.fraudWarnings ?? []).map { (payment, $0) } }.map { payment, warning in
                Item(
                    id: warning.id, created: warning.created, charge: payment.latestCharge?.id, paymentIntent: payment.id,
                    json: Self.fraudWarning(warning, of: payment))
            }
            return list(items, request: request, url: "/v1/radar/early_fraud_warnings")
        case ("events", 1):
            stats.count(endpoint: "stripe.events.list")
            // An array as Stripe's libraries send it (`types[0]=…`) or as a form usually does (`types[]=…`).
            let types = request.query.filter {
                $0.0 == "types[]" || ($0.0.hasPrefix("types[") && $0.0.dropFirst(6).dropLast().allSatisfy(\.isNumber))
            }
            .map(\.1)
            let horizon = clock() - Self.eventRetention
            let items = Self.events(world).filter { $0.created >= horizon && $0.created <= clock() && (types.isEmpty || types.contains($0.type)) }
                .map { Item(id: $0.id, created: $0.created, charge: nil, paymentIntent: $0.paymentIntent, json: $0.json) }
            return list(items, request: request, url: "/v1/events")
        default:
            return Self.error(404, type: "invalid_request_error", code: nil, message: "Unrecognized request URL (GET: \(request.path)).")
        }
    }

    /// An object of a list, with what the list's filters read.
    struct Item {
        let id: String
        let created: Date
        let charge: String?
        let paymentIntent: String
        let json: [String: Any]
    }

    private func list(_ all: [Item], request: SimulatorRequest, url: String) -> SimulatorReply {
        var items = all
        let limitText = request.queryValues("limit").last ?? "10"
        guard let limit = Int(limitText), (1...100).contains(limit) else {
            return Self.error(
                400, type: "invalid_request_error", code: "parameter_invalid_integer", message: "Invalid integer: \(limitText)", param: "limit")
        }
        for (bound, keep) in [
            ("created[gte]", { (created: Int64, value: Int64) in created >= value }), ("created[gt]", { $0 > $1 }),
            ("created[lte]", { $0 <= $1 }), ("created[lt]", { $0 < $1 }),
        ] {
            guard let text = request.queryValues(bound).last else { continue }
            guard let value = Int64(text) else {
                return Self.error(
                    400, type: "invalid_request_error", code: "parameter_invalid_integer", message: "Invalid integer: \(text)", param: "created")
            }
            items = items.filter { keep(Int64($0.created.timeIntervalSince1970), value) }
        }
        if let charge = request.queryValues("charge").last { items = items.filter { $0.charge == charge } }
        if let intent = request.queryValues("payment_intent").last { items = items.filter { $0.paymentIntent == intent } }
        // Newest first; ties by id, so that paging is stable.
        items.sort { ($0.created, $0.id) > ($1.created, $1.id) }
        if let after = request.queryValues("starting_after").last {
            guard let index = items.firstIndex(where: { $0.id == after }) else {
                return Self.missing("object", after, param: "starting_after")
            }
            items = Array(items[(index + 1)...])
        }
        let page = items.prefix(limit)
        return Self.json(["object": "list", "url": url, "has_more": items.count > limit, "data": page.map(\.json)])
    }

    /// An event of the world, as Stripe would have recorded it.
    struct Event {
        let id: String
        let type: String
        let created: Date
        let paymentIntent: String
        let json: [String: Any]
    }

    /// The events the world's refunds and disputes gave: a refund's `refund.created`, then `refund.failed`
    /// or `refund.updated` an hour later when it did not stay as created; a dispute's
    /// `charge.dispute.created`, then `charge.dispute.closed` five days later once won or lost; an early fraud
    /// warning's `radar.early_fraud_warning.created`.
    static func events(_ world: StripeWorld) -> [Event] {
        var events: [Event] = []
        func event(_ type: String, _ objectID: String, _ at: Date, _ payment: StripePaymentRecord, _ object: [String: Any]) {
            let id = "evt_" + objectID + "_" + type.replacingOccurrences(of: ".", with: "_")
            events.append(
                Event(
                    id: id, type: type, created: at, paymentIntent: payment.id,
                    json: [
                        "id": id, "object": "event", "type": type, "created": seconds(at), "livemode": payment.livemode,
                        "api_version": "2026-07-29.dahlia", "pending_webhooks": 0, "data": ["object": object],
                    ]))
        }
        for payment in world.payments.values {
            for refund in payment.refunds {
                let charge = refund.charge ?? payment.latestCharge?.id
                event("refund.created", refund.id, refund.created, payment, Self.refund(refund, charge: charge, of: payment))
                if refund.status == "failed" {
                    event("refund.failed", refund.id, refund.created + 3_600, payment, Self.refund(refund, charge: charge, of: payment))
                } else if refund.status != "pending" {
                    event("refund.updated", refund.id, refund.created + 3_600, payment, Self.refund(refund, charge: charge, of: payment))
                }
            }
            for warning in payment.fraudWarnings ?? [] {
                event("radar.early_fraud_warning.created", warning.id, warning.created, payment, Self.fraudWarning(warning, of: payment))
            }
            for dispute in payment.disputes {
                let charge = dispute.charge ?? payment.latestCharge?.id
                event("charge.dispute.created", dispute.id, dispute.created, payment, Self.dispute(dispute, charge: charge, of: payment))
                if dispute.status == "won" || dispute.status == "lost" {
                    event(
                        "charge.dispute.closed", dispute.id, dispute.created + 5 * 86_400, payment, Self.dispute(dispute, charge: charge, of: payment)
                    )
                }
            }
        }
        return events
    }

    static func charge(_ id: String, in world: StripeWorld) -> (StripePaymentRecord, StripeChargeRecord)? {
        for payment in world.payments.values { if let charge = payment.charges.first(where: { $0.id == id }) { return (payment, charge) } }
        return nil
    }

    static func seconds(_ date: Date) -> Int64 { Int64(date.timeIntervalSince1970.rounded(.down)) }

    static func paymentIntent(_ payment: StripePaymentRecord) -> [String: Any] {
        [
            "id": payment.id, "object": "payment_intent", "amount": payment.amount,
            "amount_received": payment.status == "succeeded" ? payment.amount : 0, "currency": payment.currency, "status": payment.status,
            "latest_charge": payment.latestCharge?.id ?? NSNull(), "created": seconds(payment.created), "livemode": payment.livemode,
            "metadata": [String: String](),
        ]
    }

    static func charge(_ charge: StripeChargeRecord, of payment: StripePaymentRecord) -> [String: Any] {
        let refunded = payment.refunds.filter {
            ($0.charge ?? payment.latestCharge?.id) == charge.id && ["succeeded", "pending"].contains($0.status)
        }
        .reduce(0) { $0 + $1.amount }
        return [
            "id": charge.id, "object": "charge", "amount": charge.amount, "amount_captured": charge.captured ? charge.amount : 0,
            "amount_refunded": refunded, "refunded": refunded >= charge.amount, "currency": payment.currency, "status": charge.status,
            "paid": charge.status == "succeeded", "captured": charge.captured, "payment_intent": payment.id,
            "disputed": payment.disputes.contains { ($0.charge ?? payment.latestCharge?.id) == charge.id }, "created": seconds(charge.created),
            "livemode": payment.livemode, "metadata": [String: String](),
        ]
    }

    static func refund(_ refund: StripeRefundRecord, charge: String?, of payment: StripePaymentRecord) -> [String: Any] {
        [
            "id": refund.id, "object": "refund", "amount": refund.amount, "currency": payment.currency, "status": refund.status,
            "charge": charge ?? NSNull(), "payment_intent": payment.id, "created": seconds(refund.created), "metadata": [String: String](),
            "reason": "requested_by_customer",
        ]
    }

    static func dispute(_ dispute: StripeDisputeRecord, charge: String?, of payment: StripePaymentRecord) -> [String: Any] {
        [
            "id": dispute.id, "object": "dispute", "amount": dispute.amount, "currency": payment.currency, "status": dispute.status,
            "reason": dispute.reason, "charge": charge ?? NSNull(), "payment_intent": payment.id, "created": seconds(dispute.created),
            "livemode": payment.livemode, "metadata": [String: String](), "is_charge_refundable": false,
            "evidence": dispute.evidence ?? [:],
            "evidence_details": [
                "due_by": dispute.dueBy.map { seconds($0) as Any } ?? NSNull(), "has_evidence": !(dispute.evidence ?? [:]).isEmpty,
                "past_due": false, "submission_count": dispute.submissionCount ?? 0,
            ],
            "balance_transactions": balanceTransactions(dispute, currency: payment.currency),
        ]
    }

    /// A chargeback's withdrawal (the amount and the dispute fee) and, once won, its reinstatement; an
    /// inquiry moves no money and has none.
    static func balanceTransactions(_ dispute: StripeDisputeRecord, currency: String) -> [[String: Any]] {
        guard ["needs_response", "under_review", "won", "lost"].contains(dispute.status) else { return [] }
        let fee = dispute.fee ?? 1500
        func transaction(_ suffix: String, amount: Int64, fee: Int64, category: String) -> [String: Any] {
            [
                "id": "txn_\(dispute.id)_\(suffix)", "object": "balance_transaction", "amount": amount, "currency": currency, "fee": fee,
                "fee_details": fee == 0 ? [] : [["amount": fee, "currency": currency, "description": "Dispute fee", "type": "stripe_fee"]],
                "net": amount - fee, "type": "adjustment", "reporting_category": category, "created": seconds(dispute.created),
                "status": "available",
            ]
        }
        var transactions = [transaction("withdrawal", amount: -dispute.amount, fee: fee, category: "dispute")]
        if dispute.status == "won" {
            transactions.append(
                transaction("reinstatement", amount: dispute.amount, fee: dispute.feeReturned == true ? -fee : 0, category: "dispute_reversal"))
        }
        return transactions
    }

    static func fraudWarning(_ warning: StripeFraudWarningRecord, of payment: StripePaymentRecord) -> [String: Any] {
        [
            "id": warning.id, "object": "radar.early_fraud_warning", "actionable": warning.actionable,
            "charge": payment.latestCharge?.id ?? NSNull(), "payment_intent": payment.id, "fraud_type": warning.fraudType,
            "created": seconds(warning.created), "livemode": payment.livemode,
        ]
    }

    static func json(_ object: [String: Any]) -> SimulatorReply {
        // swift-format-ignore: NeverUseForceTry
        let body = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])  // dictionaries of JSON values only
        return .json(200, Array(body), headers: [("Request-Id", "req_" + UUID().uuidString.prefix(14))])
    }

    static func missing(_ object: String, _ id: String, param: String) -> SimulatorReply {
        error(404, type: "invalid_request_error", code: "resource_missing", message: "No such \(object): '\(id)'", param: param)
    }

    static func error(_ status: Int, type: String, code: String?, message: String, param: String? = nil, shouldRetry: Bool? = nil) -> SimulatorReply {
        var details: [String: Any] = ["type": type, "message": message]
        if let code { details["code"] = code }
        if let param { details["param"] = param }
        // swift-format-ignore: NeverUseForceTry
        let body = try! JSONSerialization.data(withJSONObject: ["error": details], options: [.sortedKeys])  // strings only
        var headers: [(String, String)] = []
        if let shouldRetry { headers.append(("Stripe-Should-Retry", shouldRetry ? "true" : "false")) }
        return .json(status, Array(body), headers: headers)
    }
}

/// Misbehaviour for the next calls: a share of them answered 429 or 500 (drawn per call).
public struct StripeFaults: Sendable {
    public enum Fault: Sendable { case rateLimited, serverError }
    public var rateLimitedShare: Double
    public var serverErrorShare: Double

    public init(rateLimitedShare: Double = 0, serverErrorShare: Double = 0) {
        self.rateLimitedShare = rateLimitedShare
        self.serverErrorShare = serverErrorShare
    }

    mutating func next() -> Fault? {
        let draw = Double.random(in: 0..<1)
        if draw < rateLimitedShare { return .rateLimited }
        if draw < rateLimitedShare + serverErrorShare { return .serverError }
        return nil
    }
}
