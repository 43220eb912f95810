import Foundation
import Locking

/// Apple's per-app, per-endpoint limits: a token bucket per (bundle, environment, endpoint) holding one
/// second's worth of requests, refilled at the endpoint's rate (sandbox 10%). Apple enforces its limits
/// hourly; a per-second bucket is stricter, so a client that passes here passes there.
final class SimulatedRateLimits: Sendable {
    struct Bucket {
        var tokens: Double
        var updated: Date
    }

    /// Requests per second per endpoint in production; nil: no limit (benchmarks of the client alone).
    let productionRates: [String: Double]?
    private let buckets = Locked<[String: Bucket]>([:])

    init(productionRates: [String: Double]?) { self.productionRates = productionRates }

    /// nil when the request may go; otherwise when the next one may (for Retry-After).
    func admit(bundleID: String, environment: String, endpoint: String, now: Date) -> Date? {
        guard let rates = productionRates, let production = rates[endpoint] else { return nil }
        let rate = environment == "Sandbox" ? production / 10 : production
        let key = bundleID + "|" + environment + "|" + endpoint
        return buckets.withLock { buckets -> Date? in
            var bucket = buckets[key] ?? Bucket(tokens: rate, updated: now)
            bucket.tokens = min(rate, bucket.tokens + now.timeIntervalSince(bucket.updated) * rate)
            bucket.updated = now
            defer { buckets[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return now + (1 - bucket.tokens) / rate
        }
    }
}
