import AppStore
import Foundation

/// The figures of a run: what operators, the runs table and the metrics file read.
public struct RunCounters: Sendable, Codable, Equatable {
    /// Grants in the selection (all attempts).
    public var grantsInScope = 0
    /// Grants checked by this attempt.
    public var checked = 0
    /// Verdict counts over the whole run (from its checks).
    public var verdicts: [String: Int] = [:]
    /// Action counts of this attempt.
    public var actions: [String: Int] = [:]
    /// Verdict counts of this attempt (for progress; `verdicts` is the whole run's, from its checks).
    public var attemptVerdicts: [String: Int] = [:]
    public var newLedgerEntries = 0
    /// Units taken back by entries created in this attempt.
    public var unitsClawedBack: Int64 = 0
    /// Units given back by reversals created in this attempt.
    public var unitsReturned: Int64 = 0
    /// App Store requests, 429 answers and retries over all attempts of the run (an earlier attempt's as
    /// far as its last commit).
    public var appleRequests = 0
    public var appleRateLimited = 0
    public var appleRetries = 0
    /// Notifications strategy: grants re-verified per transaction, refunds the feed missed, and
    /// notifications that failed verification.
    public var auditedGrants = 0
    public var missedNotifications = 0
    public var rejectedNotifications = 0
    /// Grants in the default partition (outside every monthly one): should be 0.
    public var defaultPartitionRows = 0
    public var durationSeconds = 0.0

    public init() {}

    public var unverified: Int { verdicts["unverified"] ?? 0 }

    mutating func record(_ action: String, verdict: String, entryUnits: Int64?) {
        checked += 1
        actions[action, default: 0] += 1
        attemptVerdicts[verdict, default: 0] += 1
        guard let units = entryUnits else { return }
        if units > 0 { unitsClawedBack += units } else { unitsReturned += -units }
    }

    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension RunCounters {
    /// Apple's figures: the earlier attempts' plus this attempt's client's so far.
    mutating func setApple(_ current: AppStoreAPICounters, earlier: RunCounters) {
        appleRequests = earlier.appleRequests + current.requests
        appleRateLimited = earlier.appleRateLimited + current.rateLimited
        appleRetries = earlier.appleRetries + current.retries
    }
}
