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
/// costs about 2·log2(batch) extra calls and never hides the others' answers.
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

    private func answered(_ ids: [String]) async -> [String: OrderAnswer] {
        var answers: [String: OrderAnswer] = [:]
        await ask(ids, into: &answers)
        return answers
    }

    private func ask(_ ids: [String], into answers: inout [String: OrderAnswer]) async {
        if ids.count == 1 {
            answers[ids[0]] = await single(ids[0])
            return
        }
        switch await calls.get(calls.url("orders:batchGet", query: ids.map { ("orderIds", $0) })) {
        case .success(let body):
            struct Batch: Decodable { var orders: [Order]? }
            guard let batch = try? JSONDecoder().decode(Batch.self, from: Data(body)) else {
                for id in ids { answers[id] = .unanswered("Google's batch answer is not the JSON its contract describes") }
                return
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
            for id in ids {
                if conflicting.contains(id) {
                    answers[id] = .unanswered("Google's batch answer holds two different orders with this id")
                } else {
                    answers[id] = byID[id].map(OrderAnswer.order) ?? .unanswered("Google's batch answer left this order out")
                }
            }
        case .failure(let error):
            // A whole-batch failure about the ids (Google documents that one unknown or foreign id fails the
            // whole request, not with which status): halve and ask again. A 404 that names the app, an
            // empty 404, or any other failure says nothing about the ids.
            guard case .refused(let status, let reason) = error.kind, status == 400 || (status == 404 && reason == "notFound") else {
                for id in ids { answers[id] = .unanswered("\(error)") }
                return
            }
            // Both halves at once: an unknown id costs its batch about log2(batch) round trips, not twice that.
            let middle = ids.count / 2
            async let first = answered(Array(ids[..<middle]))
            let second = await answered(Array(ids[middle...]))
            answers.merge(await first) { earlier, _ in earlier }
            answers.merge(second) { earlier, _ in earlier }
        }
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
