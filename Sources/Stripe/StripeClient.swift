import Foundation
public import HTTP
import Locking

/// Stripe's API as clawback reads it: GETs with the account's restricted key as a bearer token and the
/// pinned `Stripe-Version`, lists read whole a page of 100 at a time (newest first, `starting_after` the
/// last id), and transient failures (429, 409, 5xx, the network, or Stripe's `Stripe-Should-Retry: true`)
/// asked again with a doubling pause. The one write is a dispute's evidence (`post`), each under an
/// Idempotency-Key its caller derives, so a retry or a rerun is the same request to Stripe.
public final class StripeClient: Sendable {
    /// The API version every request names, so that answers keep the shape this version reads whatever the
    /// account's default is (docs/stripe.md).
    public static let pinnedVersion = "2026-07-29.dahlia"
    static let pageSize = 100

    let baseURL: String
    let key: String
    let http: HTTPClient
    let retries: Int
    let backoff: Duration
    let counts = Locked(RequestCounts())
    /// Requests a second to each resource (nil: unpaced), and each resource's pace once asked.
    let requestsPerSecond: Double?
    let paces = Locked<[String: RequestPace]>([:])

    /// `baseURL` is Stripe's `https://api.stripe.com` unless a simulator stands in. `requestsPerSecond`:
    /// each resource (`charges`, `payment_intents`, `disputes`, …) is asked at most this often, retries
    /// included: Stripe limits each endpoint (25 a second) and asks background jobs to stay well below.
    public init(
        key: String, baseURL: String = "https://api.stripe.com", http: HTTPClient, retries: Int = 3, backoff: Duration = .milliseconds(500),
        requestsPerSecond: Double? = nil
    ) {
        self.key = key
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.http = http
        self.retries = retries
        self.backoff = backoff
        self.requestsPerSecond = requestsPerSecond
    }

    /// The pace of the resource `path` asks (its first component under `/v1/`).
    func pace(of path: String) -> RequestPace? {
        guard let requestsPerSecond else { return nil }
        let resource = path.split(separator: "/").dropFirst().first.map(String.init) ?? ""
        return paces.withLock { paces in
            if let pace = paces[resource] { return pace }
            let pace = RequestPace(perSecond: requestsPerSecond)
            paces[resource] = pace
            return pace
        }
    }

    /// Requests sent so far, rate-limit answers (429) and retries.
    public var statistics: RequestCounts { counts.withLock { $0 } }

    /// One object: `path` under `/v1/` (its id already encoded).
    public func get<Object: Decodable>(_ type: Object.Type, _ path: String, query: [(String, String)] = []) async throws(StripeError) -> Object {
        let body = try await call(path, query: query)
        do {
            return try JSONDecoder().decode(Object.self, from: Data(body))
        } catch {
            throw StripeError(.malformed, "Stripe's answer to \(path) is not a \(Object.self): \(error)")
        }
    }

    /// Every item of the list at `path` (or of its first `pages` pages), a page at a time, each page handed to `page` as it comes (so a long
    /// list is never held whole here). A list read only in part is an error, never a shorter list; so is
    /// an item that cannot be read.
    public func list<Item: StripeObject>(
        _ type: Item.Type, _ path: String, query: [(String, String)], pages: Int? = nil, page: ([Item]) throws -> Void
    ) async throws(StripeError) {
        try await walk(StripeList<Item>.self, path, query: query, pages: pages, lastID: { $0.data.last?.id }, page: { try page($0.data) })
    }

    /// Every item of the list at `path`, each read on its own: an item that cannot be read is handed over as
    /// `.unreadable` (with its id when that much can be read), so that one object Stripe answers in a shape
    /// this version cannot read does not hide the others. The list itself is still read whole or not at
    /// all; a page whose last item has no readable id cannot be paged past, and is an error.
    public func listEach<Item: StripeObject>(
        _ type: Item.Type, _ path: String, query: [(String, String)], page: ([StripeListed<Item>]) throws -> Void
    ) async throws(StripeError) {
        try await walk(StripeList<StripeListed<Item>>.self, path, query: query, pages: nil, lastID: { $0.data.last?.id }, page: { try page($0.data) })
    }

    /// Pages through `path` (`starting_after` the last item's id) until Stripe says no more follows.
    private func walk<List: StripePage>(
        _ type: List.Type, _ path: String, query: [(String, String)], pages: Int?, lastID: (List) -> String?, page: (List) throws -> Void
    ) async throws(StripeError) {
        var after: String?
        var read = 0
        while true {
            var pageQuery = query + [("limit", String(Self.pageSize))]
            if let after { pageQuery.append(("starting_after", after)) }
            let body = try await call(path, query: pageQuery)
            let list: List
            do {
                list = try JSONDecoder().decode(List.self, from: Data(body))
            } catch {
                throw StripeError(.malformed, "Stripe's page of \(path) is not a \(List.description): \(error)")
            }
            do {
                try page(list)
            } catch {
                throw StripeError(.incompleteList, "a page of \(path) could not be taken: \(error)")
            }
            read += 1
            guard list.hasMore, read != pages else { return }
            guard let last = lastID(list) else {
                throw StripeError(.incompleteList, "Stripe said more of \(path) follows a page whose last item has no id to page on")
            }
            after = last
        }
    }

    /// POSTs `form` (form-encoded, in its order) to `path` under `/v1/` with `idempotencyKey`, retried with the
    /// same key: Stripe answers a repeated key with the first request's stored answer, so the write happens
    /// at most once.
    public func post<Object: Decodable>(
        _ type: Object.Type, _ path: String, form: [(String, String)], idempotencyKey: String
    ) async throws(StripeError) -> Object {
        let body = Array(form.map { Self.formEncoded($0.0) + "=" + Self.formEncoded($0.1) }.joined(separator: "&").utf8)
        let answer = try await call(path, query: [], post: (body, idempotencyKey))
        do {
            return try JSONDecoder().decode(Object.self, from: Data(answer))
        } catch {
            throw StripeError(.malformed, "Stripe's answer to POST \(path) is not a \(Object.self): \(error)")
        }
    }

    /// A form field's name or value: brackets kept as Stripe's own library sends them, all else but the
    /// unreserved characters percent-encoded.
    static func formEncoded(_ text: String) -> String {
        URLEncoding.unreserved(text).replacingOccurrences(of: "%5B", with: "[").replacingOccurrences(of: "%5D", with: "]")
    }

    private func call(_ path: String, query: [(String, String)], post: ([UInt8], String)? = nil) async throws(StripeError) -> [UInt8] {
        let url =
            baseURL + path
            + (query.isEmpty ? "" : "?" + query.map { URLEncoding.unreserved($0.0) + "=" + URLEncoding.unreserved($0.1) }.joined(separator: "&"))
        var attempt = 0
        let pace = pace(of: path)
        while true {
            await pace?.wait()
            // A caller stopped while it waited (another slice of its list failed) sends nothing.
            if Task.isCancelled { throw StripeError(.transport, "stopped before asking \(path)") }
            let result = await once(url, post: post)
            counts.withLock { counts in
                counts.requests += 1
                if case .failure(let error) = result, case .refused(429, _, _) = error.kind { counts.rateLimited += 1 }
            }
            switch result {
            case .success(let body): return body
            case .failure(let failure):
                guard failure.isTransient, attempt < retries else { throw failure }
                do {
                    try await Task.sleep(for: min(backoff * (1 << attempt), .seconds(5)))
                } catch {
                    throw StripeError(failure.kind, failure.message + " (stopped before asking again)")
                }
                attempt += 1
                counts.withLock { $0.retries += 1 }
            }
        }
    }

    private func once(_ url: String, post: ([UInt8], String)?) async -> Result<[UInt8], StripeError> {
        var headers: HTTPHeaders = ["Authorization": "Bearer " + key, "Stripe-Version": Self.pinnedVersion, "Accept": "application/json"]
        if let (_, idempotencyKey) = post {
            headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
            headers.add(name: "Idempotency-Key", value: idempotencyKey)
        }
        let request = HTTPRequest(method: post == nil ? .get : .post, url: url, headers: headers, body: post?.0)
        let response: HTTPResponse
        do {
            response = try await http.send(request)
        } catch {
            let code = (error as? HTTPError)?.code
            let unreached = code.map { [HTTPError.Code.couldNotConnect, .tls, .invalidRequest].contains($0) } ?? false
            return .failure(StripeError(unreached ? .unreached : .transport, "\(Self.withoutQuery(url)): \(error)"))
        }
        let shouldRetry = response.headers["Stripe-Should-Retry"].map { $0.lowercased() == "true" }
        guard (200..<300).contains(response.status) else {
            let body = try? JSONDecoder().decode(ErrorBody.self, from: Data(response.body))
            let summary =
                body.map { body in
                    " (" + [body.error.type, body.error.code].compactMap { $0 }.joined(separator: " ") + ": " + (body.error.message ?? "") + ")"
                } ?? " without Stripe's error body"
            return .failure(
                StripeError(
                    .refused(status: response.status, type: body?.error.type, code: body?.error.code),
                    "Stripe answered HTTP \(response.status)\(summary) for \(Self.withoutQuery(url))", shouldRetry: shouldRetry))
        }
        return .success(response.body)
    }

    static func withoutQuery(_ url: String) -> String { url.firstIndex(of: "?").map { String(url[..<$0]) } ?? url }

    /// Stripe's error body: `{"error": {"type": ..., "code": ..., "message": ...}}`.
    struct ErrorBody: Decodable {
        struct Details: Decodable {
            let type: String?
            let code: String?
            let message: String?
        }
        let error: Details
    }
}
