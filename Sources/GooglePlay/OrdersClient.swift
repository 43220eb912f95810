import Foundation
public import HTTP

/// What Google answered about one order id.
public enum OrderAnswer: Sendable, Equatable {
    /// Google's order for exactly this id.
    case order(Order)
    /// `orders.get` for this id alone answered 404: Google's Orders API does not know it (a review, never a
    /// clawback: Google does not document that a 404 proves an order never existed).
    case notFound
    /// No answer about this id (transport, 5xx, 429 after retries, refused credentials, an answer that left
    /// it out): the grant stays unverified and is asked again next run.
    case unanswered(String)
}

/// The Orders API of one app (package name): `orders.batchget` for up to 1,000 distinct ids a call, and
/// `orders.get` for one.
///
/// Google fails a whole batch when any id in it is unknown or belongs to another package. So a failed batch
/// is split in halves and each asked again, down to single ids asked with `orders.get`: one unknown order
/// costs about 2·log2(batch) extra calls and never hides the others' answers.
public final class OrdersClient: Sendable {
    public static let maximumBatch = 1000
    /// Google's clients send a GET whose URL would pass 2,048 characters as a POST carrying the query as a
    /// form body, with `X-HTTP-Method-Override: GET` (a thousand order ids are about 35,000 characters).
    static let maximumURLLength = 2048

    public let packageName: String
    let baseURL: String
    let tokens: AccessTokenProvider
    let http: HTTPClient
    let retries: Int
    let backoff: Duration

    /// `baseURL` is Google's `https://androidpublisher.googleapis.com` unless a simulator stands in.
    public init(
        packageName: String, baseURL: String = "https://androidpublisher.googleapis.com", tokens: AccessTokenProvider,
        http: HTTPClient, retries: Int = 2, backoff: Duration = .milliseconds(500)
    ) {
        self.packageName = packageName
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.tokens = tokens
        self.http = http
        self.retries = retries
        self.backoff = backoff
    }

    /// Google's answer for every id of `orderIDs` (duplicates asked once).
    public func orders(_ orderIDs: [String]) async -> [String: OrderAnswer] {
        var seen = Set<String>()
        let distinct = orderIDs.filter { seen.insert($0).inserted }
        var answers: [String: OrderAnswer] = [:]
        for start in stride(from: 0, to: distinct.count, by: Self.maximumBatch) {
            await ask(Array(distinct[start..<min(start + Self.maximumBatch, distinct.count)]), into: &answers)
        }
        return answers
    }

    private func ask(_ ids: [String], into answers: inout [String: OrderAnswer]) async {
        if ids.count == 1 {
            answers[ids[0]] = await single(ids[0])
            return
        }
        switch await call(batchURL(ids)) {
        case .success(let body):
            struct Batch: Decodable { var orders: [Order]? }
            guard let batch = try? JSONDecoder().decode(Batch.self, from: Data(body)) else {
                for id in ids { answers[id] = .unanswered("Google's batch answer is not the JSON its contract describes") }
                return
            }
            // Matched by id, never by position: Google does not promise the order of its answer.
            var byID: [String: Order] = [:]
            for order in batch.orders ?? [] { if let id = order.orderId { byID[id] = order } }
            for id in ids { answers[id] = byID[id].map(OrderAnswer.order) ?? .unanswered("Google's batch answer left this order out") }
        case .failure(let error):
            guard case .refused(let status, _) = error.kind, status == 400 || status == 404 else {
                for id in ids { answers[id] = .unanswered("\(error)") }
                return
            }
            // A whole-batch failure: some id is unknown or foreign. Halve and ask again.
            let middle = ids.count / 2
            await ask(Array(ids[..<middle]), into: &answers)
            await ask(Array(ids[middle...]), into: &answers)
        }
    }

    private func single(_ id: String) async -> OrderAnswer {
        switch await call(url("orders/" + Self.pathEncoded(id))) {
        case .success(let body):
            guard let order = try? JSONDecoder().decode(Order.self, from: Data(body)) else {
                return .unanswered("Google's order answer is not the JSON its contract describes")
            }
            return .order(order)
        case .failure(let error):
            if case .refused(404, _) = error.kind { return .notFound }
            return .unanswered("\(error)")
        }
    }

    private func url(_ path: String) -> String {
        baseURL + "/androidpublisher/v3/applications/" + Self.pathEncoded(packageName) + "/" + path
    }

    private func batchURL(_ ids: [String]) -> String {
        url("orders:batchGet") + "?" + ids.map { "orderIds=" + AccessTokenProvider.formEncoded($0) }.joined(separator: "&")
    }

    /// GET `url` with the service account's token: one fresh token after a 401, transient failures asked
    /// again `retries` times with a doubling pause. The body of a 2xx, or why there is none.
    private func call(_ url: String) async -> Result<[UInt8], GooglePlayError> {
        var refreshed = false
        var attempt = 0
        while true {
            let result = await once(url)
            switch result {
            case .success: return result
            case .failure(let error):
                if case .refused(401, _) = error.kind, !refreshed {
                    refreshed = true
                    tokens.invalidate()
                    continue
                }
                guard error.isTransient, attempt < retries else { return result }
                try? await Task.sleep(for: backoff * (1 << attempt))
                attempt += 1
            }
        }
    }

    private func once(_ url: String) async -> Result<[UInt8], GooglePlayError> {
        let token: String
        do {
            token = try await tokens.token()
        } catch {
            return .failure(error)
        }
        var request = HTTPRequest(url: url, headers: ["Authorization": "Bearer " + token, "Accept": "application/json"])
        if url.utf8.count > Self.maximumURLLength, let query = url.firstIndex(of: "?") {
            request.method = .post
            request.url = String(url[..<query])
            request.headers.add(name: "X-HTTP-Method-Override", value: "GET")
            request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            request.body = Array(url[url.index(after: query)...].utf8)
        }
        let response: HTTPResponse
        do {
            response = try await http.send(request)
        } catch {
            return .failure(GooglePlayError(.transport, "\(request.url): \(error)"))
        }
        guard (200..<300).contains(response.status) else {
            let reason = GoogleErrorBody.reason(response.body)
            return .failure(
                GooglePlayError(
                    .refused(status: response.status, reason: reason),
                    "Google answered HTTP \(response.status)\(reason.map { " (\($0))" } ?? "") for \(request.url)"))
        }
        return .success(response.body)
    }

    static func pathEncoded(_ text: String) -> String { AccessTokenProvider.formEncoded(text) }
}

/// Google's error body: `{"error": {"code": 404, "message": "...", "status": "NOT_FOUND", "errors": [{"reason": ...}]}}`.
enum GoogleErrorBody {
    static func reason(_ body: [UInt8]) -> String? {
        struct Body: Decodable {
            struct Detail: Decodable { var reason: String? }
            struct Inner: Decodable {
                var status: String?
                var message: String?
                var errors: [Detail]?
            }
            var error: Inner?
        }
        guard let inner = (try? JSONDecoder().decode(Body.self, from: Data(body)))?.error else { return nil }
        let parts = [inner.status, inner.errors?.first?.reason, inner.message].compactMap { $0 }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }
}
