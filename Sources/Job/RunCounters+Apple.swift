import AppStore
import Storage

extension RunCounters {
    /// Apple's figures: the earlier attempts' plus this attempt's client's so far.
    mutating func setApple(_ current: AppStoreAPICounters, earlier: RunCounters) {
        appleRequests = earlier.appleRequests + current.requests
        appleRateLimited = earlier.appleRateLimited + current.rateLimited
        appleRetries = earlier.appleRetries + current.retries
    }
}
