public import Foundation
import Locking

/// Stripe as clawback and Stripe's own Python library see it, for the calls clawback makes: a PaymentIntent,
/// a charge, a dispute, and the lists of PaymentIntents, charges, refunds, disputes and events (newest first, `limit` up to 100,
/// `starting_after`, `created[gte|gt|lte|lt]`, by `charge` or `payment_intent`), behind a bearer key, with
/// Stripe's error bodies and, on request, its 429s and 500s; and a dispute's evidence posted (staged or
/// submitted, under an Idempotency-Key) or the dispute closed. Served under `/v1/` by the simulator's process.
public final class StripeSimulator: Sendable {
    static let prefix = "/v1/"

    /// The world and, once a list was asked, its lists' index (dropped whenever the world changes).
    private let state: Locked<(world: StripeWorld, index: StripeListIndex?)>
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
        state = Locked((world, nil))
        self.stats = stats
        self.clock = clock
    }

    public var world: StripeWorld { state.withLock { $0.world } }
    public func update(_ change: (inout StripeWorld) -> Void) {
        state.withLock { state in
            change(&state.world)
            state.index = nil
        }
    }
    public func setFaults(_ faults: StripeFaults) { self.faults.withLock { $0 = faults } }
    /// The `Stripe-Version` each request named, in arrival order.
    public var requestedVersions: [String] { versions.withLock { $0 } }

    public static func serves(_ path: String) -> Bool { path.hasPrefix(prefix) }

    public func handle(_ request: SimulatorRequest) -> SimulatorReply {
        let reply = answer(request)
        let latency = faults.withLock { $0.latencyMilliseconds }
        return latency > 0 ? .delayed(milliseconds: latency, reply) : reply
    }

    func answer(_ request: SimulatorRequest) -> SimulatorReply {
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
        let (world, index) = indexedWorld()
        switch (parts.first, parts.count) {
        case ("payment_intents", 2):
            stats.count(endpoint: "stripe.payment_intents.retrieve")
            guard let payment = world.payments[parts[1]] else { return Self.missing("payment_intent", parts[1], param: "intent") }
            return Self.json(served(Self.paymentIntent(payment)))
        case ("payment_intents", 1):
            stats.count(endpoint: "stripe.payment_intents.list")
            return list(index.sorted(.paymentIntents), of: world, request: request, url: "/v1/payment_intents")
        case ("charges", 2):
            stats.count(endpoint: "stripe.charges.retrieve")
            guard let place = index.charges[parts[1]], let payment = world.payments[place.payment] else {
                return Self.missing("charge", parts[1], param: "charge")
            }
            return Self.json(served(Self.charge(payment.charges[place.index], of: payment)))
        case ("charges", 1):
            stats.count(endpoint: "stripe.charges.list")
            return list(index.sorted(.charges), of: world, request: request, url: "/v1/charges")
        case ("refunds", 1):
            stats.count(endpoint: "stripe.refunds.list")
            return list(index.sorted(.refunds), of: world, request: request, url: "/v1/refunds")
        case ("disputes", 2):
            stats.count(endpoint: "stripe.disputes.retrieve")
            guard let place = index.disputes[parts[1]], let payment = world.payments[place.payment] else {
                return Self.missing("dispute", parts[1], param: "dispute")
            }
            let dispute = payment.disputes[place.index]
            return Self.json(served(Self.dispute(dispute, charge: dispute.charge ?? payment.latestCharge?.id, of: payment)))
        case ("disputes", 1):
            stats.count(endpoint: "stripe.disputes.list")
            return list(index.sorted(.disputes), of: world, request: request, url: "/v1/disputes")
        case ("radar", 2) where parts[1] == "early_fraud_warnings":
            stats.count(endpoint: "stripe.early_fraud_warnings.list")
            return list(index.sorted(.fraudWarnings), of: world, request: request, url: "/v1/radar/early_fraud_warnings")
        case ("events", 1):
            stats.count(endpoint: "stripe.events.list")
            // An array as Stripe's libraries send it (`types[0]=…`) or as a form usually does (`types[]=…`).
            let types = Set(
                request.query.filter {
                    $0.0 == "types[]" || ($0.0.hasPrefix("types[") && $0.0.dropFirst(6).dropLast().allSatisfy(\.isNumber))
                }
                .map(\.1))
            let now = clock()
            return list(
                index.sorted(.events), of: world, request: request, url: "/v1/events",
                within: Self.seconds(now - Self.eventRetention)...Self.seconds(now), keep: { types.isEmpty || types.contains($0.event ?? "") })
        default:
            return Self.error(404, type: "invalid_request_error", code: nil, message: "Unrecognized request URL (GET: \(request.path)).")
        }
    }

    /// The world and its lists' index, built on the first list asked after the world changed.
    func indexedWorld() -> (StripeWorld, StripeListIndex) {
        state.withLock { state in
            if let index = state.index { return (state.world, index) }
            let index = StripeListIndex(state.world)
            state.index = index
            return (state.world, index)
        }
    }

    /// A page of `sorted` as the request asks it: `limit` (1 to 100, 10 by default) of the entries within
    /// the `created[gte|gt|lte|lt]` bounds (and `within`, Stripe's own horizon), of one `charge` or
    /// `payment_intent` if named, after `starting_after`'s entry.
    private func list(
        _ sorted: StripeListIndex.Sorted, of world: StripeWorld, request: SimulatorRequest, url: String,
        within horizon: ClosedRange<Int64> = Int64.min...Int64.max, keep: (StripeListIndex.Entry) -> Bool = { _ in true }
    ) -> SimulatorReply {
        let limitText = request.queryValues("limit").last ?? "10"
        guard let limit = Int(limitText), (1...100).contains(limit) else {
            return Self.error(
                400, type: "invalid_request_error", code: "parameter_invalid_integer", message: "Invalid integer: \(limitText)", param: "limit")
        }
        var lower = horizon.lowerBound
        var upper = horizon.upperBound
        for bound in ["created[gte]", "created[gt]", "created[lte]", "created[lt]"] {
            guard let text = request.queryValues(bound).last else { continue }
            guard let value = Int64(text) else {
                return Self.error(
                    400, type: "invalid_request_error", code: "parameter_invalid_integer", message: "Invalid integer: \(text)", param: "created")
            }
            switch bound {
            case "created[gte]": lower = max(lower, value)
            case "created[gt]": lower = max(lower, value == .max ? value : value + 1)
            case "created[lte]": upper = min(upper, value)
            default: upper = min(upper, value == .min ? value : value - 1)
            }
        }
        let range = lower <= upper ? sorted.positions(createdFrom: lower, through: upper) : 0..<0
        // One charge's or PaymentIntent's entries are few: their positions; otherwise the range itself.
        var candidates: [Int]?
        if let charge = request.queryValues("charge").last { candidates = (sorted.byCharge[charge] ?? []).filter(range.contains) }
        if let intent = request.queryValues("payment_intent").last {
            let ofIntent = (sorted.byPaymentIntent[intent] ?? []).filter(range.contains)
            candidates = candidates.map { ours in ours.filter(ofIntent.contains) } ?? ofIntent
        }
        func included(_ position: Int) -> Bool { candidates?.contains(position) ?? range.contains(position) }
        var next = candidates?.first ?? range.lowerBound
        if let after = request.queryValues("starting_after").last {
            guard let position = sorted.position[after], included(position), keep(sorted.entries[position]) else {
                return Self.missing("object", after, param: "starting_after")
            }
            next = position + 1
        }
        let remaining = candidates.map { ours in ours.filter { $0 >= next } }.map { AnySequence($0) } ?? AnySequence(next..<range.upperBound)
        var page: [[String: Any]] = []
        var hasMore = false
        for position in remaining where keep(sorted.entries[position]) {
            if page.count == limit {
                hasMore = true
                break
            }
            guard let object = Self.object(sorted.entries[position], in: world) else { continue }
            page.append(served(object))
        }
        return Self.json(["object": "list", "url": url, "has_more": hasMore, "data": page])
    }

    /// `object` as served: unreadable when the faults name it.
    func served(_ object: [String: Any]) -> [String: Any] {
        guard let id = object["id"] as? String, faults.withLock({ $0.unreadableObjects.contains(id) }) else { return object }
        return object.merging(["amount": "unreadable"]) { $1 }
    }

    /// An entry's object as the world now holds it (nil: its payment is gone, which the index rules out).
    static func object(_ entry: StripeListIndex.Entry, in world: StripeWorld) -> [String: Any]? {
        guard let payment = world.payments[entry.paymentIntent] else { return nil }
        let object: [String: Any]
        switch entry.source {
        case .paymentIntent: object = paymentIntent(payment)
        case .charge(let index): object = charge(payment.charges[index], of: payment)
        case .refund(let index):
            let refund = payment.refunds[index]
            object = self.refund(refund, charge: refund.charge ?? payment.latestCharge?.id, of: payment)
        case .dispute(let index):
            let dispute = payment.disputes[index]
            object = self.dispute(dispute, charge: dispute.charge ?? payment.latestCharge?.id, of: payment)
        case .fraudWarning(let index):
            guard let warning = payment.fraudWarnings?[index] else { return nil }
            object = fraudWarning(warning, of: payment)
        }
        guard let type = entry.event else { return object }
        // An event as Stripe would have recorded it, its object a snapshot (here: as the world now holds it).
        return [
            "id": entry.id, "object": "event", "type": type, "created": entry.created, "livemode": payment.livemode,
            "api_version": "2026-07-29.dahlia", "pending_webhooks": 0, "data": ["object": object],
        ]
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

/// Misbehaviour for the next calls: a share of them answered 429 or 500 (drawn per call), objects served
/// in a shape no client can read (their `amount` a string), listed or asked alone, and every answer
/// delayed, as an API across the Internet answers.
public struct StripeFaults: Sendable {
    public enum Fault: Sendable { case rateLimited, serverError }
    public var rateLimitedShare: Double
    public var serverErrorShare: Double
    public var unreadableObjects: Set<String>
    public var latencyMilliseconds: Int

    public init(rateLimitedShare: Double = 0, serverErrorShare: Double = 0, unreadableObjects: Set<String> = [], latencyMilliseconds: Int = 0) {
        self.rateLimitedShare = rateLimitedShare
        self.serverErrorShare = serverErrorShare
        self.unreadableObjects = unreadableObjects
        self.latencyMilliseconds = latencyMilliseconds
    }

    mutating func next() -> Fault? {
        let draw = Double.random(in: 0..<1)
        if draw < rateLimitedShare { return .rateLimited }
        if draw < rateLimitedShare + serverErrorShare { return .serverError }
        return nil
    }
}
