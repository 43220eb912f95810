public import Foundation
public import HTTP
import Locking
public import Logging

/// Where the App Store Server API lives and how hard to try.
public struct AppStoreServerConfiguration: Sendable {
    public static let productionBaseURL = "https://api.storekit.apple.com"
    public static let sandboxBaseURL = "https://api.storekit-sandbox.apple.com"

    /// Base URL per environment; the simulator replaces both.
    public var baseURLs: [AppStoreEnvironment: String]
    public var retry: RetryPolicy

    public init(
        baseURLs: [AppStoreEnvironment: String] = [.production: productionBaseURL, .sandbox: sandboxBaseURL],
        retry: RetryPolicy = .init()
    ) {
        self.baseURLs = baseURLs
        self.retry = retry
    }
}

/// Counters an operator wants after a run: the HTTP module's `RequestCounts`, as Google's client counts too.
public typealias AppStoreAPICounters = RequestCounts

/// The App Store Server API for one app: bearer JWTs, Apple's rate limits, retries of exactly the
/// retryable failures, 429 with Retry-After, and all pages of paged endpoints.
public final class AppStoreServerAPIClient: Sendable {
    public let configuration: AppStoreServerConfiguration
    let http: HTTPClient
    let tokens: BearerTokenProvider
    let limiter: RateLimiter
    let logger: Logger
    private let random: @Sendable () -> Double
    private let counters = Locked(AppStoreAPICounters())

    public var bundleID: String { tokens.credentials.bundleID }

    public init(
        http: HTTPClient, tokens: BearerTokenProvider, limiter: RateLimiter, configuration: AppStoreServerConfiguration = .init(),
        logger: Logger = Logger(label: "clawback.appstore"), random: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }
    ) {
        self.http = http
        self.tokens = tokens
        self.limiter = limiter
        self.configuration = configuration
        self.logger = logger
        self.random = random
    }

    public var statistics: AppStoreAPICounters { counters.withLock { $0 } }

    // MARK: - Endpoints

    /// Get Transaction Info: the signed transaction (`signedTransactionInfo`), not yet verified.
    public func transactionInfo(_ transactionID: String, environment: AppStoreEnvironment) async throws(AppStoreAPIError)
        -> String
    {
        let body = try await send(
            .transactionInfo, environment: environment, path: "/inApps/v1/transactions/\(URLEncoding.pathSegment(transactionID))")
        return try Self.decode(TransactionInfoResponse.self, from: body, endpoint: .transactionInfo).signedTransactionInfo
    }

    /// Get Transaction History v2, every page; `onPage` gets each page's signed transactions as they come.
    /// Returns the last revision.
    @discardableResult
    public func transactionHistory(
        _ transactionID: String, environment: AppStoreEnvironment, query: TransactionHistoryQuery = .init(),
        onPage: ([String]) async throws -> Void
    ) async throws -> String? {
        var revision: String?
        while true {
            var parameters = query.parameters
            if let revision { parameters.append(("revision", revision)) }
            let body = try await send(
                .transactionHistory, environment: environment,
                path: "/inApps/v2/history/\(URLEncoding.pathSegment(transactionID))", query: parameters)
            let page = try Self.decode(HistoryResponse.self, from: body, endpoint: .transactionHistory)
            try await onPage(page.signedTransactions ?? [])
            guard page.hasMore == true else { return page.revision }
            guard let next = page.revision, next != revision else {
                throw AppStoreAPIError(.invalidResponse("hasMore without a new revision"), endpoint: "\(AppStoreEndpoint.transactionHistory)")
            }
            revision = next
        }
    }

    /// Get Refund History v2 from `revision` (nil: from the beginning), every page. Returns the signed
    /// transactions and the revision to store for the next incremental call.
    public func refundHistory(_ transactionID: String, environment: AppStoreEnvironment, since revision: String? = nil)
        async throws(AppStoreAPIError) -> (signedTransactions: [String], revision: String?)
    {
        var revision = revision
        var transactions: [String] = []
        while true {
            let body = try await send(
                .refundHistory, environment: environment, path: "/inApps/v2/refund/lookup/\(URLEncoding.pathSegment(transactionID))",
                query: revision.map { [("revision", $0)] } ?? [])
            let page = try Self.decode(RefundHistoryResponse.self, from: body, endpoint: .refundHistory)
            transactions += page.signedTransactions ?? []
            guard page.hasMore == true else { return (transactions, page.revision ?? revision) }
            guard let next = page.revision, next != revision else {
                throw AppStoreAPIError(.invalidResponse("hasMore without a new revision"), endpoint: "\(AppStoreEndpoint.refundHistory)")
            }
            revision = next
        }
    }

    /// Get Notification History, every page (`paginationToken`, same body each time); `onPage` gets each
    /// page as it comes.
    public func notificationHistory(
        _ request: NotificationHistoryRequest, environment: AppStoreEnvironment,
        onPage: ([NotificationHistoryItem]) async throws -> Void
    ) async throws {
        let body = try JSONEncoder().encode(request)
        var token: String?
        while true {
            let answer = try await send(
                .notificationHistory, environment: environment, method: .post, path: "/inApps/v1/notifications/history",
                query: token.map { [("paginationToken", $0)] } ?? [], body: Array(body))
            let page = try Self.decode(NotificationHistoryResponse.self, from: answer, endpoint: .notificationHistory)
            try await onPage(page.notificationHistory ?? [])
            guard page.hasMore == true else { return }
            guard let next = page.paginationToken, next != token else {
                throw AppStoreAPIError(.invalidResponse("hasMore without a new paginationToken"), endpoint: "\(AppStoreEndpoint.notificationHistory)")
            }
            token = next
        }
    }

    /// Look Up Order ID (production only: Apple has no sandbox for it).
    public func lookUpOrderID(_ orderID: String) async throws(AppStoreAPIError) -> OrderLookup {
        let body = try await send(.lookUpOrderID, environment: .production, path: "/inApps/v1/lookup/\(URLEncoding.pathSegment(orderID))")
        return try Self.decode(OrderLookup.self, from: body, endpoint: .lookUpOrderID)
    }

    /// Send Consumption Information (v2): answers a CONSUMPTION_REQUEST for `transactionID`. The body is
    /// checked against Apple's rules first and never sent when it breaks one; Apple answers 202 with no body.
    /// Nothing is sent, first attempt or retry, at or after `until` (Apple's deadline less a margin).
    public func sendConsumptionInformation(
        _ transactionID: String, environment: AppStoreEnvironment, answer: ConsumptionRequest, productType: ProductType?, until: Date? = nil
    ) async throws(ConsumptionAnswerError) {
        do {
            try answer.validate(productType: productType)
        } catch {
            throw .invalidLocally(error)
        }
        guard let body = try? answer.json() else { throw .unencodable }
        do {
            _ = try await send(
                .sendConsumptionInformation, environment: environment, method: .put,
                path: "/inApps/v2/transactions/consumption/\(URLEncoding.pathSegment(transactionID))", body: Array(body), until: until)
        } catch {
            throw .apple(error)
        }
    }

    // MARK: - One request, with limits and retries

    func send(
        _ endpoint: AppStoreEndpoint, environment: AppStoreEnvironment, method: HTTPRequest.Method = .get, path: String,
        query: [(String, String)] = [], body: [UInt8]? = nil, until: Date? = nil
    ) async throws(AppStoreAPIError) -> [UInt8] {
        let name = endpoint.rawValue
        guard let base = configuration.baseURLs[environment] else {
            throw AppStoreAPIError(.invalidResponse("no base URL configured for environment \(environment)"), endpoint: name)
        }
        let url = base + path + Self.queryString(query)
        let key = RateLimiter.Key(bundleID: bundleID, environment: environment, endpoint: endpoint)
        let policy = configuration.retry
        let started = ContinuousClock.now
        var refreshedToken = false
        var rateLimitedWaits = 0
        var attempt = 0
        var lastFailure = ""
        while attempt < policy.maxAttempts && ContinuousClock.now - started < policy.budget {
            attempt += 1
            if attempt > 1 { counters.withLock { $0.retries += 1 } }
            do {
                try await limiter.acquire(key)
            } catch {
                throw AppStoreAPIError(.transport(HTTPError(.cancelled, message: "cancelled", url: url)), endpoint: name)
            }
            if let until, Date() >= until {
                throw AppStoreAPIError(
                    .retriesExhausted(attempts: attempt - 1, last: "stopped at \(until): past its deadline; \(lastFailure)"), endpoint: name)
            }
            let token: String
            do { token = try tokens.token() } catch {
                throw AppStoreAPIError(.invalidResponse("could not sign the bearer token: \(error)"), endpoint: name)
            }
            var headers: HTTPHeaders = ["Authorization": "Bearer \(token)", "Accept": "application/json"]
            if body != nil { headers.add(name: "Content-Type", value: "application/json") }
            counters.withLock { $0.requests += 1 }
            let response: HTTPResponse
            do {
                response = try await http.send(HTTPRequest(method: method, url: url, headers: headers, body: body))
            } catch let error as HTTPError {
                guard error.isTransient else { throw AppStoreAPIError(.transport(error), endpoint: name) }
                lastFailure = "\(error)"
                try await pause(policy.backoff(afterAttempt: attempt, random: random()), url: url, endpoint: name)
                continue
            } catch {
                throw AppStoreAPIError(.transport(HTTPError(.cancelled, message: "\(error)", url: url)), endpoint: name)
            }

            switch response.status {
            case 200..<300:
                return response.body
            case 401:
                // One fresh token, in case the cached one aged out under a jumping clock; then give up.
                guard !refreshedToken else { throw AppStoreAPIError(.unauthorized, endpoint: name) }
                refreshedToken = true
                tokens.invalidate()
                attempt -= 1
                continue
            case 429:
                counters.withLock { $0.rateLimited += 1 }
                let delay = RetryAfter.delay(response.headers["Retry-After"], now: Date()) ?? policy.backoff(afterAttempt: attempt, random: 1)
                lastFailure = "HTTP 429 RateLimitExceededError, Retry-After \(delay)"
                guard delay <= policy.maxRetryAfter else {
                    throw AppStoreAPIError(
                        .apple(status: 429, code: .rateLimitExceeded, message: "Retry-After \(delay) is beyond the limit"), endpoint: name)
                }
                // Everyone using this bucket waits; the next acquire() sleeps until then. Not an attempt.
                limiter.pause(key, for: delay)
                rateLimitedWaits += 1
                if rateLimitedWaits <= policy.maxRateLimitedWaits { attempt -= 1 }
                logger.notice("rate limited by Apple", metadata: ["apple.endpoint": "\(name)", "apple.retry_after": "\(delay)"])
                continue
            default:
                let error = Self.appleError(response, endpoint: name)
                lastFailure = "\(error)"
                guard case .apple(let status, let code, _) = error.kind else { throw error }
                switch code?.retryClass ?? (status >= 500 ? .retry : .fail) {
                case .retry:
                    try await pause(policy.backoff(afterAttempt: attempt, random: random()), url: url, endpoint: name)
                case .retryAfterDelay:
                    try await pause(max(policy.generalErrorDelay, policy.backoff(afterAttempt: attempt, random: random())), url: url, endpoint: name)
                case .rateLimited:
                    limiter.pause(key, for: policy.backoff(afterAttempt: attempt, random: 1))
                case .fail:
                    throw error
                }
            }
        }
        throw AppStoreAPIError(.retriesExhausted(attempts: attempt, last: lastFailure), endpoint: name)
    }

    private func pause(_ delay: Duration, url: String, endpoint: String) async throws(AppStoreAPIError) {
        do {
            try await Task.sleep(for: delay)
        } catch {
            throw AppStoreAPIError(.transport(HTTPError(.cancelled, message: "cancelled while waiting to retry", url: url)), endpoint: endpoint)
        }
    }

    /// The error an error status means. Only Apple's own error JSON (`errorCode`, `errorMessage`) gives a
    /// code; a body that is not that (a proxy's HTML page, JSON without either field) is named in the message,
    /// so that nobody mistakes it for Apple's bare 400 (an empty body), which some endpoints document as final.
    static func appleError(_ response: HTTPResponse, endpoint: String) -> AppStoreAPIError {
        let payload = try? JSONDecoder().decode(ErrorPayload.self, from: Data(response.body))
        var message = payload?.errorMessage
        if payload?.errorCode == nil && message == nil && !response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            message =
                "a body that is not Apple's error JSON (\(response.body.count) bytes\(response.headers["Content-Type"].map { ", \($0)" } ?? ""))"
        }
        return AppStoreAPIError(
            .apple(status: response.status, code: payload?.errorCode.map(AppleErrorCode.init(rawValue:)), message: message), endpoint: endpoint)
    }

    package static func decode<T: Decodable>(_ type: T.Type, from body: [UInt8], endpoint: AppStoreEndpoint) throws(AppStoreAPIError) -> T {
        if let fast = T.self as? any FlatJSONDecodable.Type, let value = fast.init(flatJSON: body) as? T { return value }
        do {
            return try JSONDecoder().decode(T.self, from: Data(body))
        } catch {
            throw AppStoreAPIError(.invalidResponse("the body is not a valid \(T.self) (\(body.count) bytes)"), endpoint: endpoint.rawValue)
        }
    }

    static func queryString(_ parameters: [(String, String)]) -> String {
        guard !parameters.isEmpty else { return "" }
        return "?" + parameters.map { URLEncoding.pathSegment($0.0) + "=" + URLEncoding.pathSegment($0.1) }.joined(separator: "&")
    }
}
