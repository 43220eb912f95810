/// What a store's API cost so far, counted by its client: requests sent, those refused for a rate limit
/// (Apple's 429, Google's 429 or rate-limit 403), and retries. One type for both stores, so a run's counters
/// read the same whichever store it asked.
public struct RequestCounts: Sendable, Equatable {
    public var requests = 0
    public var rateLimited = 0
    public var retries = 0

    public init(requests: Int = 0, rateLimited: Int = 0, retries: Int = 0) {
        self.requests = requests
        self.rateLimited = rateLimited
        self.retries = retries
    }

    /// The sum of several clients' counts.
    public static func total(_ counts: some Sequence<RequestCounts>) -> RequestCounts {
        counts.reduce(into: RequestCounts()) { total, next in
            total.requests += next.requests
            total.rateLimited += next.rateLimited
            total.retries += next.retries
        }
    }
}
