import Foundation
public import HTTP

/// What Google answered about one order id.
public enum OrderAnswer: Sendable, Equatable {
    /// Google's order for exactly this id.
    case order(Order)
    /// `orders.get` for this id alone answered 404 with Google's `notFound`, while other orders of the same
    /// call were answered (so the app was reachable): Google's Orders API does not know it. A review, never a
    /// clawback: Google does not document that a 404 proves an order never existed.
    case notFound
    /// No answer about this id (transport, 5xx, 429 after retries, refused credentials, an answer that left
    /// it out, the run's call budget spent): the grant stays unverified and is asked again next run.
    case unanswered(String)
    /// `orders.get` for this id alone was refused with a 400 (Google will not take the id: not an order id
    /// of its form): unverified, and a person's once the refusal persists over runs.
    case refused(String)
}

/// The Orders API of one app (package name): `orders.batchget` for up to 1,000 distinct ids a call, and
/// `orders.get` for one.
///
/// Google fails a whole batch when any id in it is unknown or belongs to another package. So a failed batch
/// is split in halves and each asked again, down to single ids asked with `orders.get`: one unknown order
/// costs about 2·log2(batch) extra calls and never hides the others' answers. A refusal of every id alike
/// (an account the app does not serve, ids Google will not take) stops the halving after a few calls.
public final class OrdersClient: Sendable {
    public static let maximumBatch = 1000
    let calls: GoogleCalls
    public var packageName: String { calls.packageName }
    /// Requests sent so far (each batch, half batch and single order), rate-limit refusals and retries.
    public var statistics: GoogleCallStatistics { calls.counters.statistics }

    /// `baseURL` is Google's `https://androidpublisher.googleapis.com` unless a simulator stands in.
    public init(
        packageName: String, baseURL: String = "https://androidpublisher.googleapis.com", tokens: AccessTokenProvider,
        http: HTTPClient, retries: Int = 2, backoff: Duration = .milliseconds(500), allowance: CallAllowance = .unlimited
    ) {
        calls = GoogleCalls(
            packageName: packageName, baseURL: baseURL, tokens: tokens, http: http, retries: retries, backoff: backoff, allowance: allowance)
    }

    /// Google's answer for every id of `orderIDs` (duplicates asked once; an empty id is not asked).
    public func orders(_ orderIDs: [String]) async -> [String: OrderAnswer] {
        var seen = Set<String>()
        var answers: [String: OrderAnswer] = [:]
        let distinct = orderIDs.filter { id in
            guard !id.isEmpty else {
                answers[id] = .unanswered("an empty order id is not asked")
                return false
            }
            return seen.insert(id).inserted
        }
        for start in stride(from: 0, to: distinct.count, by: Self.maximumBatch) {
            await ask(Array(distinct[start..<min(start + Self.maximumBatch, distinct.count)]), into: &answers)
        }
        // A 404 for every order asked cannot tell unknown orders from an app Google does not serve to this
        // account: "not found" stands only beside an answered order.
        if !answers.values.contains(where: { if case .order = $0 { true } else { false } }) {
            for (id, answer) in answers {
                switch answer {
                case .notFound:
                    answers[id] = .unanswered("Google answered no order of \(packageName) in this call: a 404 cannot be told from an unreachable app")
                case .refused(let reason):
                    // Every id refused: the app or the call is at fault, not this id.
                    answers[id] = .unanswered(reason + " (and no order of this call was answered)")
                case .order, .unanswered: break
                }
            }
        }
        return answers
    }

    /// Whether this account may read the app's orders, changing nothing: `orders.get` of an order id no
    /// purchase has. Google's 404 `notFound` for it says the call was allowed; a refusal (401
    /// `permissionDenied`, 403, 404 `applicationNotFound`) comes back as the error.
    public func checkAccess() async -> GooglePlayError? {
        switch await calls.get(calls.url("orders/" + URLEncoding.pathSegment("GPA.0000-clawback-config-check"))) {
        case .success: return nil
        case .failure(let error):
            if case .refused(404, "notFound") = error.kind { return nil }
            return error
        }
    }

    /// How one call about several ids ended: answers for each, or a refusal of the whole call that may be
    /// about any of its ids (Google documents that one unknown or foreign id fails the whole request).
    private enum BatchOutcome {
        case answered([String: OrderAnswer])
        case refused(status: Int, reason: String?)
    }

    private func ask(_ ids: [String], into answers: inout [String: OrderAnswer]) async {
        if ids.count == 1 {
            answers[ids[0]] = await single(ids[0])
            return
        }
        switch await batch(ids) {
        case .answered(let batchAnswers): answers.merge(batchAnswers) { _, new in new }
        case .refused: await split(ids, probing: true, into: &answers)
        }
    }

    /// The ids of a refused call, asked again in halves (both at once: an unknown id costs its batch about
    /// log2(batch) round trips, not twice that).
    ///
    /// When both halves of a whole batch are refused the same way, the refusal may be the call's, not one
    /// id's (an account the app does not serve, ids of a form Google does not take): then a few ids of each
    /// half, picked at random, are asked alone. If none is an order Google answers, the halving stops there
    /// and the other ids are unanswered for this run (asked again next run, with other ids picked), instead of
    /// the 2N−1 calls that halving down to every single id would cost. If any is an order, the refusals are
    /// about ids after all and the halving goes on. Smaller batches, deeper in the halving, are cheap to halve
    /// and are not probed: a few unknown ids among them must not cost their neighbours an answer.
    private func split(_ ids: [String], probing: Bool, into answers: inout [String: OrderAnswer]) async {
        let middle = ids.count / 2
        let halves = (Array(ids[..<middle]), Array(ids[middle...]))
        async let firstOutcome = outcome(halves.0)
        let secondOutcome = await outcome(halves.1)
        let outcomes = (await firstOutcome, secondOutcome)
        var left = halves
        if probing, ids.count >= Self.smallestProbedBatch, case .refused(let firstStatus, let firstReason) = outcomes.0,
            case .refused(let secondStatus, let secondReason) = outcomes.1, firstStatus == secondStatus, firstReason == secondReason
        {
            let probes = Array(halves.0.shuffled().prefix(Self.probesPerHalf)) + Array(halves.1.shuffled().prefix(Self.probesPerHalf))
            let probeAnswers = await withTaskGroup(of: (String, OrderAnswer).self) { group in
                for id in probes { group.addTask { (id, await self.single(id)) } }
                return await group.reduce(into: [String: OrderAnswer]()) { $0[$1.0] = $1.1 }
            }
            answers.merge(probeAnswers) { _, probe in probe }
            guard probeAnswers.values.contains(where: { if case .order = $0 { true } else { false } }) else {
                let unasked = probeAnswers.values.compactMap { if case .unanswered(let why) = $0 { why } else { nil } }
                let reason =
                    unasked.isEmpty
                    ? "Google refused \(ids.count) orders of \(packageName) in two halves alike (\(firstStatus) \(firstReason ?? "without a reason")) and \(probes.count) of them alone too: the refusal is not known to be about this order, asked again next run"
                    : "Google refused \(ids.count) orders of \(packageName) in two halves alike and \(unasked.count) of them could not be asked alone (\(unasked[0])): asked again next run"
                for id in ids where probeAnswers[id] == nil { answers[id] = .unanswered(reason) }
                return
            }
            // The probes are answered: the halving goes on without them, so that no id is asked twice (two
            // different answers for one id would be kept as the first).
            let probed = Set(probes)
            left = (halves.0.filter { !probed.contains($0) }, halves.1.filter { !probed.contains($0) })
        }
        let (firstLeft, secondLeft) = left
        async let firstAnswers = resolved(outcomes.0, of: firstLeft)
        let secondAnswers = await resolved(outcomes.1, of: secondLeft)
        answers.merge(await firstAnswers) { _, new in new }
        answers.merge(secondAnswers) { _, new in new }
    }

    /// Batches smaller than this are halved down without probes.
    static let smallestProbedBatch = 32
    /// Ids of each half asked alone when both halves of a batch are refused alike.
    static let probesPerHalf = 3

    /// One call for `ids`: a batch, or `orders.get` for a single id (whose answer is always an answer).
    private func outcome(_ ids: [String]) async -> BatchOutcome {
        ids.count == 1 ? .answered([ids[0]: await single(ids[0])]) : await batch(ids)
    }

    /// The answers for `ids` after their call ended with `outcome`: a refusal is split further (a single id
    /// left is asked alone).
    private func resolved(_ outcome: BatchOutcome, of ids: [String]) async -> [String: OrderAnswer] {
        switch outcome {
        case .answered(let answers): return answers
        case .refused where ids.count <= 1:
            guard let id = ids.first else { return [:] }
            return [id: await single(id)]
        case .refused:
            var answers: [String: OrderAnswer] = [:]
            await split(ids, probing: false, into: &answers)
            return answers
        }
    }

    private func batch(_ ids: [String]) async -> BatchOutcome {
        switch await calls.get(calls.url("orders:batchGet", query: ids.map { ("orderIds", $0) })) {
        case .success(let body):
            struct Batch: Decodable { var orders: [Order]? }
            guard let batch = try? JSONDecoder().decode(Batch.self, from: Data(body)) else {
                return .answered(Self.unanswered(ids, "Google's batch answer is not the JSON its contract describes"))
            }
            // Matched by id, never by position: Google does not promise the order of its answer. An id answered
            // twice, differently, is answered by neither.
            var byID: [String: Order] = [:]
            var conflicting = Set<String>()
            for order in batch.orders ?? [] {
                guard let id = order.orderId else { continue }
                if let earlier = byID[id], earlier != order { conflicting.insert(id) }
                byID[id] = order
            }
            var answers: [String: OrderAnswer] = [:]
            for id in ids {
                if conflicting.contains(id) {
                    answers[id] = .unanswered("Google's batch answer holds two different orders with this id")
                } else {
                    answers[id] = byID[id].map(OrderAnswer.order) ?? .unanswered("Google's batch answer left this order out")
                }
            }
            return .answered(answers)
        case .failure(let error):
            // A whole-batch failure about the ids (Google documents that one unknown or foreign id fails the
            // whole request, not with which status) is split. A 404 that names the app, an empty 404, or any
            // other failure says nothing about the ids.
            guard case .refused(let status, let reason) = error.kind, status == 400 || (status == 404 && reason == "notFound") else {
                return .answered(Self.unanswered(ids, "\(error)"))
            }
            return .refused(status: status, reason: reason)
        }
    }

    private static func unanswered(_ ids: [String], _ reason: String) -> [String: OrderAnswer] {
        Dictionary(uniqueKeysWithValues: ids.map { ($0, .unanswered(reason)) })
    }

    private func single(_ id: String) async -> OrderAnswer {
        switch await calls.get(calls.url("orders/" + URLEncoding.pathSegment(id))) {
        case .success(let body):
            guard let order = try? JSONDecoder().decode(Order.self, from: Data(body)) else {
                return .unanswered("Google's order answer is not the JSON its contract describes")
            }
            guard order.orderId == id else { return .unanswered("Google answered about order \(order.orderId ?? "(none)")") }
            return .order(order)
        case .failure(let error):
            if case .refused(404, "notFound") = error.kind { return .notFound }
            if case .refused(400, _) = error.kind { return .refused("Google refuses order id \(id): \(error)") }
            return .unanswered("\(error)")
        }
    }
}
