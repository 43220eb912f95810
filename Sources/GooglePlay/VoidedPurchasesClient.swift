public import Foundation
public import HTTP

/// Google's Voided Purchases feed of one app (`purchases.voidedpurchases.list`), read whole or not at all.
///
/// Google keeps 30 days of it, filters by when its systems recorded a void (not `voidedTimeMillis`), pages it
/// with `nextPageToken`, and allows 30 calls in any 30 seconds per app: the client asks from at most 30
/// days back, follows every page, paces itself under that limit, and asks for quantity-based partial
/// refunds' own rows (`includeQuantityBasedPartialRefund`). In-app purchases only (`type` 0): clawback's
/// grants are consumables.
public final class VoidedPurchasesClient: Sendable {
    public static let horizon: TimeInterval = 30 * 86_400
    /// Pages of one read at most (10,000,000 voids at 1,000 a page): past it the feed is not read whole.
    public static let maximumPages = 10_000
    /// Asked a little inside Google's 30 days, so that the clock between here and Google cannot put the
    /// start outside it.
    public static let horizonMargin: TimeInterval = 600

    public struct Feed: Sendable, Equatable {
        /// The rows, oldest recorded first, as Google pages them.
        public var rows: [VoidedPurchase]
        /// What the feed covers: voids Google recorded from `from` until `until`.
        public var from: Date
        public var until: Date
        public var pages: Int
    }

    let calls: GoogleCalls
    let pacer: CallPacer
    public var packageName: String { calls.packageName }

    public init(
        packageName: String, baseURL: String = "https://androidpublisher.googleapis.com", tokens: AccessTokenProvider, http: HTTPClient,
        retries: Int = 2, backoff: Duration = .milliseconds(500), callsPer30Seconds: Int = 30
    ) {
        calls = GoogleCalls(packageName: packageName, baseURL: baseURL, tokens: tokens, http: http, retries: retries, backoff: backoff)
        pacer = CallPacer(calls: callsPer30Seconds, per: .seconds(30))
    }

    /// Every void Google recorded from `start` (no further back than Google keeps, less a margin) until a
    /// minute before `now` (Google refuses an end past its own clock). Throws when any page could not be
    /// read: a feed read in part says nothing about what it missed.
    public func voids(from start: Date, now: Date = Date()) async throws(GooglePlayError) -> Feed {
        let until = now - 60
        let from = min(until, max(start, now - Self.horizon + Self.horizonMargin))
        let query = [("type", "0"), ("includeQuantityBasedPartialRefund", "true"), ("maxResults", "1000")]
        let window = [
            ("startTime", String(Int64(from.timeIntervalSince1970 * 1000))), ("endTime", String(Int64(until.timeIntervalSince1970 * 1000))),
        ]
        var rows: [VoidedPurchase] = []
        var token: String?
        var seen: Set<String> = []
        var pages = 0
        repeat {
            await pacer.wait()
            // With a token, Google ignores the times; the token carries the query.
            let body = try await calls.get(calls.url("purchases/voidedpurchases", query: query + (token.map { [("token", $0)] } ?? window))).get()
            struct Page: Decodable {
                struct Pagination: Decodable { var nextPageToken: String? }
                var voidedPurchases: [VoidedPurchase]?
                var tokenPagination: Pagination?
            }
            let page: Page
            do {
                page = try JSONDecoder().decode(Page.self, from: Data(body))
            } catch {
                throw GooglePlayError(.malformedAnswer, "page \(pages + 1) of \(packageName)'s voided purchases is not Google's JSON: \(error)")
            }
            rows += page.voidedPurchases ?? []
            pages += 1
            token = page.tokenPagination?.nextPageToken.flatMap { $0.isEmpty ? nil : $0 }
            // A feed that never ends is not read whole: a token given twice would loop, and 30 days of voids at
            // 1,000 a page take far fewer pages than the cap.
            if let next = token {
                guard seen.insert(next).inserted else {
                    throw GooglePlayError(.malformedAnswer, "\(packageName)'s voided purchases gave page token \(next) twice, after \(pages) pages")
                }
                guard pages < Self.maximumPages else {
                    throw GooglePlayError(.malformedAnswer, "\(packageName)'s voided purchases go on past \(Self.maximumPages) pages")
                }
            }
        } while token != nil
        return Feed(rows: rows, from: from, until: until, pages: pages)
    }
}

/// At most `calls` calls in any window of `per`: a call waits until the oldest of the last `calls` is
/// `per` old.
actor CallPacer {
    let calls: Int
    let per: Duration
    private var recent: [ContinuousClock.Instant] = []

    init(calls: Int, per: Duration) {
        self.calls = max(1, calls)
        self.per = per
    }

    func wait() async {
        let clock = ContinuousClock()
        if recent.count >= calls, let oldest = recent.first {
            let ready = oldest + per
            if ready > clock.now { try? await Task.sleep(until: ready, clock: clock) }
            recent.removeFirst()
        }
        recent.append(clock.now)
    }
}
