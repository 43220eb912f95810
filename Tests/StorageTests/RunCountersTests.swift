import Foundation
import Reconciliation
import Storage
import Testing

@Suite("The runs table's counters")
struct RunCountersTests {
    @Test("stored JSON keeps its keys, verdicts and actions are typed, and a run stored by an older clawback still reads")
    func storedJSON() throws {
        var counters = RunCounters()
        counters.grantsInScope = 3000
        counters.verdicts = [.ok: 2990, .noRefundReported: 5, .unverified: 5]
        counters.record(.clawbackCreated, verdict: .refunded, entryUnits: 600)
        let json = counters.json
        for key in [#""grantsInScope":3000"#, #""no_refund_reported":5"#, #""clawback_created":1"#, #""unitsClawedBack":600"#] {
            #expect(json.contains(key), "\(key) not in \(json)")
        }
        #expect(try RunCounters.decode(json: json) == counters)
        // Written before the notification figures existed: the missing ones read as zero.
        let older = try RunCounters.decode(json: #"{"grantsInScope":12,"verdicts":{"ok":11,"unverified":1},"actions":{"none":11}}"#)
        #expect(older.grantsInScope == 12 && older.unverified == 1 && older.rejectedNotifications == 0)
        #expect(older.actions[.none] == 11)
        #expect(throws: (any Error).self) { try RunCounters.decode(json: #"{"verdicts":{"maybe":1}}"#) }
    }

    @Test("a run's store requests are stored under store-neutral keys; 1.1.0's apple keys still read, and never win over the new ones")
    func storeRequests() throws {
        var counters = RunCounters()
        counters.storeRequests = 40
        counters.storeRateLimited = 2
        counters.storeRetries = 3
        let json = counters.json
        #expect(json.contains(#""storeRequests":40"#) && json.contains(#""storeRateLimited":2"#) && json.contains(#""storeRetries":3"#))
        #expect(!json.contains("apple"), "\(json)")
        let earlier = try RunCounters.decode(json: #"{"appleRequests":12,"appleRateLimited":1,"appleRetries":4}"#)
        #expect(earlier.storeRequests == 12 && earlier.storeRateLimited == 1 && earlier.storeRetries == 4)
        let both = try RunCounters.decode(json: #"{"appleRequests":12,"storeRequests":7}"#)
        #expect(both.storeRequests == 7)
    }

    @Test("a run's status is one of five, spelled as the runs table's column")
    func statuses() {
        #expect(RunStatus.allCases.map(\.rawValue) == ["running", "succeeded", "incomplete", "interrupted", "failed"])
    }
}
