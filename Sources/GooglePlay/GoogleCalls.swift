import Foundation
public import HTTP
import Locking

/// One app's GETs to Google's API as clawback makes every one: its URLs under
/// `androidpublisher/v3/applications/{package}/`, the service account's token, one fresh token after a 401,
/// transient failures (408, 429, 5xx, 403 for a rate limit, the network) asked again with a doubling pause, a
/// URL longer than Google's clients send as a POST form, and Google's error body read into the error.
struct GoogleCalls: Sendable {
    /// Google's clients send a GET whose URL would pass 2,048 characters as a POST carrying the query as a
    /// form body, with `X-HTTP-Method-Override: GET` (a thousand order ids are about 35,000 characters).
    static let maximumURLLength = 2048

    let packageName: String
    let tokens: AccessTokenProvider
    let http: HTTPClient
    let retries: Int
    let backoff: Duration
    /// What these calls cost so far, read by a run for its counters.
    let counters = GoogleCallCounters()
    let allowance: CallAllowance
    private let appURL: String

    /// `baseURL` is Google's `https://androidpublisher.googleapis.com` unless a simulator stands in.
    init(
        packageName: String, baseURL: String, tokens: AccessTokenProvider, http: HTTPClient, retries: Int, backoff: Duration,
        allowance: CallAllowance = .unlimited
    ) {
        self.allowance = allowance
        self.packageName = packageName
        self.tokens = tokens
        self.http = http
        self.retries = retries
        self.backoff = backoff
        appURL =
            (baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL) + "/androidpublisher/v3/applications/"
            + URLEncoding.pathSegment(packageName) + "/"
    }

    /// The app's `path` (already encoded) with `query`, each key and value encoded.
    func url(_ path: String, query: [(String, String)] = []) -> String {
        appURL + path
            + (query.isEmpty ? "" : "?" + query.map { URLEncoding.unreserved($0.0) + "=" + URLEncoding.unreserved($0.1) }.joined(separator: "&"))
    }

    /// Calls under another root than an app's (Pub/Sub's `https://pubsub.googleapis.com/v1/`): `name` stands
    /// for the app in messages.
    init(name: String, rootURL: String, tokens: AccessTokenProvider, http: HTTPClient, retries: Int, backoff: Duration) {
        allowance = .unlimited
        packageName = name
        self.tokens = tokens
        self.http = http
        self.retries = retries
        self.backoff = backoff
        appURL = rootURL
    }

    /// GET `url` with the service account's token: one fresh token after a 401, transient failures asked
    /// again `retries` times with a doubling pause. The body of a 2xx, or why there is none.
    func get(_ url: String) async -> Result<[UInt8], GooglePlayError> {
        await call(url, body: nil, askAgain: \.isTransient)
    }

    /// POST `json` to `url`, as `get` does; a failure is asked again only when `askAgain` says so (a call
    /// that must reach Google at most once is asked again only after an answer that says it was not taken).
    /// `maxResponseBytes` overrides the client's cap on the answer (a Pub/Sub pull's messages are up to 10 MB).
    func post(
        _ url: String, json: [UInt8], askAgain: @Sendable (GooglePlayError) -> Bool = \.isTransient, maxResponseBytes: Int? = nil
    ) async -> Result<[UInt8], GooglePlayError> {
        await call(url, body: json, askAgain: askAgain, maxResponseBytes: maxResponseBytes)
    }

    private func call(_ url: String, body: [UInt8]?, askAgain: (GooglePlayError) -> Bool, maxResponseBytes: Int? = nil) async -> Result<
        [UInt8], GooglePlayError
    > {
        var refreshed = false
        var attempt = 0
        while true {
            guard await allowance.take() else {
                let budget = allowance.budget.map(String.init) ?? "no"
                return .failure(
                    GooglePlayError(.budgetSpent, "this run's Google Play call budget (\(budget) calls) is spent: asked again by the next run"))
            }
            let result = await once(url, body: body, maxResponseBytes: maxResponseBytes)
            counters.count(result)
            switch result {
            case .success: return result
            case .failure(let error):
                if case .refused(401, _) = error.kind, !refreshed {
                    refreshed = true
                    tokens.invalidate()
                    continue
                }
                guard askAgain(error), attempt < retries else { return result }
                do {
                    try await Task.sleep(for: backoff * (1 << attempt))
                } catch {
                    return result  // cancelled: no more tries
                }
                attempt += 1
                counters.countRetry()
            }
        }
    }

    private func once(_ url: String, body: [UInt8]?, maxResponseBytes: Int?) async -> Result<[UInt8], GooglePlayError> {
        let token: String
        do {
            token = try await tokens.token()
        } catch {
            // Without a token the call itself never left, whatever happened to the token's request.
            return .failure(error.kind == .transport ? GooglePlayError(.unreached, error.message) : error)
        }
        var request = HTTPRequest(url: url, headers: ["Authorization": "Bearer " + token, "Accept": "application/json"])
        request.maxResponseBytes = maxResponseBytes
        if let body {
            request.method = .post
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = body
        } else if url.utf8.count > Self.maximumURLLength, let query = url.firstIndex(of: "?") {
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
            let code = (error as? HTTPError)?.code
            let unreached = code.map { [HTTPError.Code.couldNotConnect, .tls, .invalidRequest].contains($0) } ?? false
            let kind: GooglePlayError.Kind = code == .responseTooLarge ? .answerTooLarge : unreached ? .unreached : .transport
            return .failure(GooglePlayError(kind, "\(request.url): \(error)", timedOut: code == .timedOut))
        }
        guard (200..<300).contains(response.status) else {
            // Without Google's error body (a proxy, a wrong base URL, nothing there) the status says nothing
            // about the ids asked: the reason stays nil, and nothing reads it as "not found".
            let body = GoogleErrorBody(response.body)
            let summary = body.map { " (\($0.summary))" } ?? " without Google's error body"
            return .failure(
                GooglePlayError(
                    .refused(status: response.status, reason: body?.reason ?? body?.status),
                    "Google answered HTTP \(response.status)\(summary) for \(request.url)"))
        }
        return .success(response.body)
    }
}

/// Google's error body: `{"error": {"code": 404, "message": "...", "status": "NOT_FOUND", "errors": [{"reason":
/// "notFound", ...}]}}`; the Play Developer API's own errors carry a reason (`notFound`, `applicationNotFound`,
/// `permissionDenied`) and may have no `status`.
struct GoogleErrorBody {
    var status: String?
    var reason: String?
    var message: String?

    init?(_ body: [UInt8]) {
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
        status = inner.status
        reason = inner.errors?.first?.reason
        message = inner.message
    }

    var summary: String { [status, reason, message].compactMap { $0 }.joined(separator: ", ") }
}

/// Requests sent to Google, those refused for a rate limit, and retries.
public typealias GoogleCallStatistics = RequestCounts

/// The figures of one app's calls, counted as they are made (from any task).
final class GoogleCallCounters: Sendable {
    private let figures = Locked(GoogleCallStatistics())

    var statistics: GoogleCallStatistics { figures.withLock { $0 } }

    func count(_ result: Result<[UInt8], GooglePlayError>) {
        figures.withLock { figures in
            figures.requests += 1
            if case .failure(let error) = result, error.isRateLimit { figures.rateLimited += 1 }
        }
    }

    func countRetry() { figures.withLock { $0.retries += 1 } }
}
