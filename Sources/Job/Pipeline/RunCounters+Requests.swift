import HTTP
import Storage

extension RunCounters {
    /// The run's store's figures: the earlier attempts' plus this attempt's clients' so far.
    mutating func setStore(_ current: RequestCounts, earlier: RunCounters) {
        storeRequests = earlier.storeRequests + current.requests
        storeRateLimited = earlier.storeRateLimited + current.rateLimited
        storeRetries = earlier.storeRetries + current.retries
    }
}
