import Foundation
public import Reconciliation

/// The figures of a run: what operators, the runs table (`clawback.runs.counters`, JSON) and the metrics
/// file read. This type owns that JSON: its keys are spelled out below, every key is optional when read (a
/// run written by an older clawback decodes, missing figures reading as zero), and everything else (the
/// reports, `clawback runs`) reads the counters through `RunStore`, never by naming JSON keys in SQL.
public struct RunCounters: Sendable, Codable, Equatable {
    /// Grants in the selection (all attempts).
    public var grantsInScope = 0
    /// Grants checked by this attempt.
    public var checked = 0
    /// Verdict counts over the whole run (from its checks).
    public var verdicts: [Verdict: Int] = [:]
    /// Action counts of this attempt.
    public var actions: [CheckAction: Int] = [:]
    /// Verdict counts of this attempt (for progress; `verdicts` is the whole run's, from its checks).
    public var attemptVerdicts: [Verdict: Int] = [:]
    public var newLedgerEntries = 0
    /// Units taken back by entries created in this attempt.
    public var unitsClawedBack: Int64 = 0
    /// Units given back by reversals created in this attempt.
    public var unitsReturned: Int64 = 0
    /// The run's store's requests, rate-limit answers (the App Store's 429s, Google's quota refusals) and
    /// retries over all attempts of the run (an earlier attempt's as far as its last commit). Which store
    /// they were sent to is the run's (`RunStrategy.store`).
    public var storeRequests = 0
    public var storeRateLimited = 0
    public var storeRetries = 0
    /// Notifications strategy: grants re-verified per transaction, refunds the feed missed, and
    /// notifications that failed verification.
    public var auditedGrants = 0
    public var missedNotifications = 0
    public var rejectedNotifications = 0
    /// Google Play: each app whose kept voids do not cover the run's window, with why (never swept, kept only
    /// from a later instant, a stale cursor). Its runs still decide from the orders, but lose a chargeback's or
    /// fraud's reason and a quantity refund's exact units.
    public var voidsNotCovered: [String] = []
    /// Grants in the default partition (outside every monthly one): should be 0.
    public var defaultPartitionRows = 0
    public var durationSeconds = 0.0

    public init() {}

    /// The JSON keys, as stored since the first release: renaming a property must not rename its key. The
    /// store's requests were stored as `appleRequests`, `appleRateLimited` and `appleRetries` before runs
    /// asked Google too: those keys are still read (never written), so a run written then decodes.
    enum CodingKeys: String, CodingKey {
        case grantsInScope, checked, verdicts, actions, attemptVerdicts, newLedgerEntries, unitsClawedBack, unitsReturned
        case storeRequests, storeRateLimited, storeRetries, auditedGrants, missedNotifications, rejectedNotifications, voidsNotCovered
        case defaultPartitionRows, durationSeconds
    }

    /// The keys of 1.1.0 and earlier (see `CodingKeys`).
    enum EarlierKeys: String, CodingKey {
        case requests = "appleRequests"
        case rateLimited = "appleRateLimited"
        case retries = "appleRetries"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func read<T: Decodable>(_ key: CodingKeys, _ fallback: T) throws -> T { try container.decodeIfPresent(T.self, forKey: key) ?? fallback }
        grantsInScope = try read(.grantsInScope, 0)
        checked = try read(.checked, 0)
        verdicts = try read(.verdicts, [:])
        actions = try read(.actions, [:])
        attemptVerdicts = try read(.attemptVerdicts, [:])
        newLedgerEntries = try read(.newLedgerEntries, 0)
        unitsClawedBack = try read(.unitsClawedBack, 0)
        unitsReturned = try read(.unitsReturned, 0)
        let earlier = try decoder.container(keyedBy: EarlierKeys.self)
        func read(_ key: CodingKeys, or earlierKey: EarlierKeys) throws -> Int {
            try container.decodeIfPresent(Int.self, forKey: key) ?? earlier.decodeIfPresent(Int.self, forKey: earlierKey) ?? 0
        }
        storeRequests = try read(.storeRequests, or: .requests)
        storeRateLimited = try read(.storeRateLimited, or: .rateLimited)
        storeRetries = try read(.storeRetries, or: .retries)
        auditedGrants = try read(.auditedGrants, 0)
        missedNotifications = try read(.missedNotifications, 0)
        rejectedNotifications = try read(.rejectedNotifications, 0)
        voidsNotCovered = try read(.voidsNotCovered, [])
        defaultPartitionRows = try read(.defaultPartitionRows, 0)
        durationSeconds = try read(.durationSeconds, 0)
    }

    public var unverified: Int { verdicts[.unverified] ?? 0 }

    public mutating func record(_ action: CheckAction, verdict: Verdict, entryUnits: Int64?, times: Int = 1) {
        guard times > 0 else { return }
        checked += times
        actions[action, default: 0] += times
        attemptVerdicts[verdict, default: 0] += times
        guard let units = entryUnits else { return }
        if units > 0 { unitsClawedBack += units } else { unitsReturned += -units }
    }

    /// The JSON stored in `clawback.runs.counters`.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// Counters from their stored JSON.
    public static func decode(json: String) throws -> RunCounters { try JSONDecoder().decode(RunCounters.self, from: Data(json.utf8)) }
}

/// Where a run is. The runs table's `status` column holds the raw values.
public enum RunStatus: String, Sendable, CaseIterable, Codable {
    case running
    /// Every grant has a verified answer (or a review); reports and prune may still be pending (`finalizedAt`).
    case succeeded
    /// Finished with unverified grants: a rerun of the same scope asks about those only.
    case incomplete
    /// Stopped by a signal at a batch boundary: a rerun resumes it.
    case interrupted
    /// The database or the store failed during the run: a rerun resumes it.
    case failed
}
